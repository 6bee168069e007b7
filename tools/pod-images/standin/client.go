package main

// standin client: an in-cluster caller of a Service, as a batch driver calls
// batch.default.svc.<clusterDomain> directly (not through a gateway). It sends GET
// requests to -url at -rate per second until it has sent -count or -duration has
// passed (both bounded), trusting the CA in -ca and naming the URL's host as the TLS
// server name. Connections are pooled (-keepalive, default true) as an HTTP client
// library would; without it every request opens a connection, so each one resolves
// the name and passes kube-proxy again.
//
// It serves its tally as JSON on plain HTTP (-stats, default :8080, GET /stats):
// requests sent, answered 2xx, failed (with the last failures' times and errors), and
// how many answers came from each pod (the X-Pod header of the stand-in pods). It keeps
// serving after the run ends, until SIGTERM.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Failure is one failed request.
type Failure struct {
	At    time.Time `json:"at"`
	Error string    `json:"error"`
}

// Tally is what GET /stats returns.
type Tally struct {
	URL      string           `json:"url"`
	Sent     int64            `json:"sent"`
	OK       int64            `json:"ok"`
	Failed   int64            `json:"failed"`
	Pods     map[string]int64 `json:"pods"`
	Failures []Failure        `json:"failures"`
	Done     bool             `json:"done"`
}

const keptFailures = 20

type tally struct {
	mu sync.Mutex
	t  Tally
}

func (t *tally) answered(pod string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.t.OK++
	t.t.Pods[pod]++
}

func (t *tally) failed(err string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.t.Failed++
	t.t.Failures = append(t.t.Failures, Failure{At: time.Now().UTC(), Error: err})
	if len(t.t.Failures) > keptFailures {
		t.t.Failures = t.t.Failures[len(t.t.Failures)-keptFailures:]
	}
}

func (t *tally) snapshot() Tally {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.t
	s.Pods = make(map[string]int64, len(t.t.Pods))
	for k, v := range t.t.Pods {
		s.Pods[k] = v
	}
	s.Failures = append([]Failure{}, t.t.Failures...)
	return s
}

func runClient(args []string) {
	flags := flag.NewFlagSet("client", flag.ExitOnError)
	target := flags.String("url", "", "HTTPS URL to call (required)")
	caFile := flags.String("ca", "/etc/tls/ca.crt", "CA certificate the server's certificate must chain to")
	rate := flags.Float64("rate", 10, "requests per second (0 < rate <= 1000)")
	count := flags.Int64("count", 1000, "stop after this many requests (1..1000000)")
	duration := flags.Duration("duration", 10*time.Minute, "stop after this long (at most 1h)")
	timeout := flags.Duration("timeout", 5*time.Second, "timeout of one request")
	keepAlive := flags.Bool("keepalive", true, "reuse connections")
	stats := flags.String("stats", ":8080", "address to serve GET /stats on (plain HTTP)")
	_ = flags.Parse(args)

	u, err := url.Parse(*target)
	switch {
	case *target == "" || err != nil || u.Scheme != "https" || u.Hostname() == "":
		log.Fatalf("-url %q: an https:// URL with a host is required", *target)
	case *rate <= 0 || *rate > 1000:
		log.Fatalf("-rate %v: between 0 (exclusive) and 1000 requests per second", *rate)
	case *count < 1 || *count > 1_000_000:
		log.Fatalf("-count %d: between 1 and 1000000", *count)
	case *duration <= 0 || *duration > time.Hour:
		log.Fatalf("-duration %s: more than 0 and at most 1h", *duration)
	}
	pem, err := os.ReadFile(*caFile)
	if err != nil {
		log.Fatalf("reading the CA certificate: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		log.Fatalf("%s holds no PEM certificate", *caFile)
	}
	transport := &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: pool, ServerName: u.Hostname(), MinVersion: tls.VersionTLS12},
		DisableKeepAlives:   !*keepAlive,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     90 * time.Second,
	}
	client := &http.Client{Transport: transport, Timeout: *timeout}

	t := &tally{t: Tally{URL: *target, Pods: map[string]int64{}, Failures: []Failure{}}}
	go serveStats(*stats, t)

	ctx, cancel := context.WithTimeout(context.Background(), *duration)
	defer cancel()
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	go func() { <-signals; cancel(); os.Exit(0) }()

	log.Printf("standin client: %s at %v/s, at most %d requests or %s, keepalive %v", *target, *rate, *count, *duration, *keepAlive)
	var inFlight sync.WaitGroup
	var sent atomic.Int64
	ticker := time.NewTicker(time.Duration(float64(time.Second) / *rate))
	defer ticker.Stop()
loop:
	for sent.Load() < *count {
		select {
		case <-ctx.Done():
			break loop
		case <-ticker.C:
		}
		sent.Add(1)
		t.mu.Lock()
		t.t.Sent++
		t.mu.Unlock()
		inFlight.Add(1)
		go func() {
			defer inFlight.Done()
			call(client, *target, t)
		}()
	}
	inFlight.Wait()
	t.mu.Lock()
	t.t.Done = true
	final := t.t
	t.mu.Unlock()
	log.Printf("done: %d sent, %d ok, %d failed", final.Sent, final.OK, final.Failed)
	select {} // keep serving the tally until SIGTERM
}

func call(client *http.Client, target string, t *tally) {
	resp, err := client.Get(target)
	if err != nil {
		t.failed(err.Error())
		return
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.failed(fmt.Sprintf("reading the body: %v", err))
		return
	}
	if resp.StatusCode/100 != 2 {
		t.failed(fmt.Sprintf("status %d", resp.StatusCode))
		return
	}
	t.answered(resp.Header.Get("X-Pod"))
}

func serveStats(addr string, t *tally) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(t.snapshot())
	})
	server := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	log.Fatal(server.ListenAndServe())
}
