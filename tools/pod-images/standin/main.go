// standin: the stand-in pods of the local node, in the two images
// scripts/build-components.sh makes from it.
//
//	standin echo   a routed service's pod (image localhost/envoy-gateways/https-echo)
//	standin auth   the ext_authz service (image localhost/envoy-gateways/ext-authz)
//	standin client an in-cluster caller of a Service (client.go; run from the echo image)
//
// Both serve HTTPS on :443 with the certificate of the pod's Service
// (<service>.<namespace>.svc.<clusterDomain>, mounted from the Secret
// <service>-tls at /etc/tls: tls.crt, tls.key and ca.crt). A client certificate is
// verified against ca.crt when one is presented, and its subject is reported.
//
// echo answers every request with JSON naming the pod (its host name), its
// namespace (from its ServiceAccount token's mount, or else the Service name on
// its certificate: the program's service pods mount no token), the Service name
// on its certificate, the TLS server name the client asked for,
// and what it received (method, path, headers, client address).
//
// auth answers the gateway's check requests (paths under
// /api/v1alpha/verify_dev_credentials, the stack's default auth.pathPrefix):
// 200 when the request carries "Authorization: Bearer <token>" or the cookie
// "session=<token>" with the token below, 401 otherwise. Anything else it echoes,
// like its own pages (/login) would be served.
//
// On SIGTERM both keep serving for -shutdown-delay (default 10s) while the pod
// leaves DNS and the gateways drain their connections to it, then stop
// gracefully: a pod scaled away fails no request.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// Token is the credential the stand-in auth service accepts.
const Token = "envoy-gateways-local"

// CheckPrefix is the path prefix of ext_authz check requests (auth.pathPrefix's default).
const CheckPrefix = "/api/v1alpha/verify_dev_credentials"

// Answer is what echo returns as JSON.
type Answer struct {
	Pod               string              `json:"pod"`
	Namespace         string              `json:"namespace"`
	Service           string              `json:"service"`
	ServerName        string              `json:"serverName"`
	Method            string              `json:"method"`
	Path              string              `json:"path"`
	Host              string              `json:"host"`
	Headers           map[string][]string `json:"headers"`
	RemoteAddress     string              `json:"remoteAddress"`
	ClientCertificate string              `json:"clientCertificate,omitempty"`
	Requests          int64               `json:"requests"`
}

type server struct {
	mode      string
	pod       string
	namespace string
	service   string
	requests  atomic.Int64
	checks    atomic.Int64
}

func main() {
	if len(os.Args) >= 2 && os.Args[1] == "client" {
		runClient(os.Args[2:])
		return
	}
	if len(os.Args) < 2 || (os.Args[1] != "echo" && os.Args[1] != "auth") {
		fmt.Fprintln(os.Stderr, "usage: standin echo|auth [-listen :443] [-tls-dir /etc/tls] [-shutdown-delay 10s]")
		fmt.Fprintln(os.Stderr, "       standin client -url https://... [-rate 10] [-count 1000] [-duration 10m] [-keepalive=true] [-stats :8080]")
		os.Exit(2)
	}
	mode := os.Args[1]
	flags := flag.NewFlagSet(mode, flag.ExitOnError)
	listen := flags.String("listen", ":443", "address to serve HTTPS on")
	tlsDir := flags.String("tls-dir", "/etc/tls", "directory with tls.crt, tls.key and (optional) ca.crt")
	delay := flags.Duration("shutdown-delay", 10*time.Second, "how long to keep serving after SIGTERM")
	_ = flags.Parse(os.Args[2:])

	cert, err := tls.LoadX509KeyPair(*tlsDir+"/tls.crt", *tlsDir+"/tls.key")
	if err != nil {
		log.Fatalf("loading the certificate from %s: %v", *tlsDir, err)
	}
	tlsConfig := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if pem, err := os.ReadFile(*tlsDir + "/ca.crt"); err == nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			log.Fatalf("%s/ca.crt holds no PEM certificate", *tlsDir)
		}
		tlsConfig.ClientCAs = pool
		tlsConfig.ClientAuth = tls.VerifyClientCertIfGiven
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		log.Fatalf("parsing %s/tls.crt: %v", *tlsDir, err)
	}
	s := &server{mode: mode, service: leaf.Subject.CommonName}
	if len(leaf.DNSNames) > 0 {
		s.service = leaf.DNSNames[0]
	}
	s.pod, _ = os.Hostname()
	s.namespace = namespaceOf(s.service)
	if ns, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil {
		s.namespace = strings.TrimSpace(string(ns))
	}

	httpServer := &http.Server{
		Addr:              *listen,
		Handler:           s,
		TLSConfig:         tlsConfig,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       5 * time.Minute,
		ErrorLog:          log.New(os.Stderr, "", log.LstdFlags),
	}
	done := make(chan struct{})
	go func() {
		signals := make(chan os.Signal, 1)
		signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
		sig := <-signals
		log.Printf("%s: serving %s more, then stopping", sig, *delay)
		time.Sleep(*delay)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = httpServer.Shutdown(ctx)
		close(done)
	}()
	log.Printf("standin %s: pod %s, service %s, HTTPS on %s", mode, s.pod, s.service, *listen)
	if err := httpServer.ListenAndServeTLS("", ""); !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
	<-done
	log.Printf("stopped after %d requests (%d checks)", s.requests.Load(), s.checks.Load())
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := s.requests.Add(1)
	w.Header().Set("X-Pod", s.pod)
	if s.mode == "auth" && strings.HasPrefix(r.URL.Path, CheckPrefix) {
		s.checks.Add(1)
		if credentialed(r) {
			w.Header().Set("X-Auth-User", "local-dev")
			w.WriteHeader(http.StatusOK)
			return
		}
		http.Error(w, "not signed in", http.StatusUnauthorized)
		return
	}
	answer := Answer{
		Pod:           s.pod,
		Namespace:     s.namespace,
		Service:       s.service,
		Method:        r.Method,
		Path:          r.URL.RequestURI(),
		Host:          r.Host,
		Headers:       r.Header,
		RemoteAddress: r.RemoteAddr,
		Requests:      n,
	}
	if r.TLS != nil {
		answer.ServerName = r.TLS.ServerName
		if len(r.TLS.PeerCertificates) > 0 {
			answer.ClientCertificate = r.TLS.PeerCertificates[0].Subject.CommonName
		}
	}
	body, _ := json.Marshal(answer)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

func credentialed(r *http.Request) bool {
	if r.Header.Get("Authorization") == "Bearer "+Token {
		return true
	}
	c, err := r.Cookie("session")
	return err == nil && c.Value == Token
}

// namespaceOf is the namespace in a Service's DNS name (<service>.<namespace>.svc.<domain>),
// for pods that mount no ServiceAccount token (the program's service pods do not); "" otherwise.
func namespaceOf(serviceName string) string {
	labels := strings.Split(serviceName, ".")
	if len(labels) >= 4 && labels[2] == "svc" {
		return labels[1]
	}
	return ""
}
