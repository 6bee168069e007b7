module envoy-gateways/tools/pod-images

go 1.26.0
