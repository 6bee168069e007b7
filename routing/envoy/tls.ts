// TLS: the listener's certificate, upstream TLS to pods, and the SDS files
// that let Envoy pick up renewed certificates from the mounted Secrets
// (watched_directory follows the kubelet's ..data swap) without a restart.
import type { RoutingConfig, StackConfig } from "../config/schema.js";
import { SDS_FILES, SECRET, TYPE, type EnvoyPaths, type Json } from "./types.js";
import { envoyDuration } from "./units.js";

/** An SDS secret read from a file in the bootstrap directory. */
function sdsSecret(paths: EnvoyPaths, name: keyof typeof SDS_FILES): Json {
  return {
    name,
    sds_config: {
      path_config_source: { path: `${paths.bootstrapDir}/${SDS_FILES[name]}` },
      resource_api_version: "V3",
    },
  };
}

/** The TLS context of the HTTPS listener: TLS 1.2+ (configurable), modern ciphers, h2 and http/1.1. */
export function downstreamTransportSocket(config: StackConfig, paths: EnvoyPaths): Json {
  return {
    name: "envoy.transport_sockets.tls",
    typed_config: {
      "@type": TYPE.downstreamTls,
      common_tls_context: {
        tls_params: {
          tls_minimum_protocol_version: config.tls.minimumVersion,
          cipher_suites: config.tls.cipherSuites,
          ecdh_curves: ["X25519", "P-256"],
        },
        tls_certificate_sds_secret_configs: [sdsSecret(paths, SECRET.server)],
        alpn_protocols: ["h2", "http/1.1"],
      },
    },
  };
}

/**
 * Upstream TLS to pods. SNI is the Service's DNS name. `verify`: client
 * certificate plus verification against the CA, the certificate's DNS SAN
 * matching that SNI (production, and dev when so configured).
 * `encrypt-only`: TLS without verification. `sni`: where the name comes from:
 * the cluster's host (auto_host_sni, set here), or the request's Host (the
 * on-demand cluster: set by its protocol options, upstreamProtocolOptions).
 */
export function upstreamTransportSocket(
  paths: EnvoyPaths,
  mode: "verify" | "encrypt-only",
  sni: "cluster host" | "request host" = "cluster host",
): Json {
  const common_tls_context =
    mode === "verify"
      ? {
          tls_params: { tls_minimum_protocol_version: "TLSv1_2" },
          tls_certificate_sds_secret_configs: [sdsSecret(paths, SECRET.upstreamClient)],
          validation_context_sds_secret_config: sdsSecret(paths, SECRET.upstreamCa),
        }
      : {
          tls_params: { tls_minimum_protocol_version: "TLSv1_2" },
          validation_context: { trust_chain_verification: "ACCEPT_UNTRUSTED" },
        };
  const typed: Json = { "@type": TYPE.upstreamTls, common_tls_context };
  if (sni === "cluster host") {
    typed.auto_host_sni = true;
    if (mode === "verify") typed.auto_sni_san_validation = true;
  }
  return { name: "envoy.transport_sockets.tls", typed_config: typed };
}

/**
 * HTTP options of upstream connections: pooled connections closed after the
 * idle timeout, HTTP/1.1 or HTTP/2 with bounded windows. `requestHostTls`
 * (the on-demand cluster): SNI from the request's Host, and with `verify` the
 * certificate's SAN checked against it.
 */
export function upstreamProtocolOptions(config: RoutingConfig, requestHostTls?: "verify" | "encrypt-only"): Json {
  const edge = config.edge;
  return {
    "envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
      "@type": TYPE.httpProtocolOptions,
      ...(requestHostTls
        ? { upstream_http_protocol_options: { auto_sni: true, auto_san_validation: requestHostTls === "verify" } }
        : {}),
      common_http_protocol_options: { idle_timeout: envoyDuration(config.upstream.idleTimeout) },
      explicit_http_config:
        config.upstream.protocol === "http2"
          ? {
              http2_protocol_options: {
                max_concurrent_streams: edge.http2MaxConcurrentStreams,
                initial_stream_window_size: edge.http2InitialStreamWindowSize,
                initial_connection_window_size: edge.http2InitialConnectionWindowSize,
              },
            }
          : { http_protocol_options: {} },
    },
  };
}

/** The SDS files of a gateway (file name -> DiscoveryResponse with one Secret). */
export function sdsDocuments(paths: EnvoyPaths): Record<string, Json> {
  const secret = (resource: Json): Json => ({ version_info: "1", resources: [{ "@type": TYPE.secret, ...resource }] });
  return {
    [SDS_FILES[SECRET.server]]: secret({
      name: SECRET.server,
      tls_certificate: {
        certificate_chain: { filename: `${paths.serverTlsDir}/tls.crt` },
        private_key: { filename: `${paths.serverTlsDir}/tls.key` },
        watched_directory: { path: paths.serverTlsDir },
      },
    }),
    [SDS_FILES[SECRET.upstreamClient]]: secret({
      name: SECRET.upstreamClient,
      tls_certificate: {
        certificate_chain: { filename: `${paths.upstreamTlsDir}/tls.crt` },
        private_key: { filename: `${paths.upstreamTlsDir}/tls.key` },
        watched_directory: { path: paths.upstreamTlsDir },
      },
    }),
    [SDS_FILES[SECRET.upstreamCa]]: secret({
      name: SECRET.upstreamCa,
      validation_context: {
        trusted_ca: { filename: `${paths.upstreamTlsDir}/ca.crt` },
        watched_directory: { path: paths.upstreamTlsDir },
      },
    }),
  };
}
