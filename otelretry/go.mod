module github.com/httpretry/httpretry/otelretry

go 1.25.0

// Here otelretry builds against the working tree. A replace applies only
// in the main module, so a user who runs go get gets the httpretry version
// required below, which the module proxy fetches from this repository.
// Between releases that is the pseudo-version of a commit on main that has
// every API otelretry uses; a release commit requires the release
// (CONTRIBUTING.md, "Cutting a release").
replace github.com/httpretry/httpretry => ../

require (
	github.com/httpretry/httpretry v0.0.0-20261201212555-d7d57f7f21ea
	github.com/stretchr/testify v1.12.1
	go.opentelemetry.io/otel v1.46.0
	go.opentelemetry.io/otel/metric v1.46.0
	go.opentelemetry.io/otel/sdk/metric v1.46.0
	go.uber.org/goleak v1.3.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/go-logr/logr v1.4.4 // indirect
	github.com/go-logr/stdr v1.2.2 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/hashicorp/go-cleanhttp v0.5.2 // indirect
	go.opentelemetry.io/auto/sdk v1.2.1 // indirect
	go.opentelemetry.io/otel/sdk v1.46.0 // indirect
	go.opentelemetry.io/otel/trace v1.46.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sys v0.47.0 // indirect
)
