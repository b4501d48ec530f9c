module github.com/httpretry/httpretry

go 1.25

require (
	github.com/hashicorp/go-cleanhttp v0.5.2
	go.uber.org/goleak v1.3.0
)

require (
	github.com/stretchr/testify v1.12.1
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)
