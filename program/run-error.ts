// Errors that stop the program with a message for the user.
import * as pulumi from "@pulumi/pulumi";

/**
 * A pulumi.RunError (the engine prints its message, without a stack) whose
 * stack is only its message. The engine also records every program error
 * with util.inspect in colour, which for some stack frames (source-mapped
 * paths under node_modules) runs for tens of seconds and gigabytes; a
 * RunError's frames say nothing to the user anyway.
 */
export function runError(message: string): pulumi.RunError {
  const error = new pulumi.RunError(message);
  error.stack = message;
  return error;
}
