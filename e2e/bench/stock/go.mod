// The bench's bare mcp-go server built on mcp-go as published (v1.2.1),
// not on toolgate's patched copy: a replace directive applies only in the
// module it is written in, so building the root module's bareserver from
// this module, or running this module's BenchmarkMCPCall, links the mcp-go
// the require below names. See e2e/bench/README.md ("two bare servers").
module toolgate.invalid/benchstock

go 1.26.0

require (
	github.com/mark3labs/mcp-go v1.2.1
	github.com/toolgate/toolgate v0.0.0-00010101000000-000000000000
)

require (
	github.com/google/jsonschema-go v0.4.3 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3 // indirect
	github.com/spf13/cast v1.7.1 // indirect
	github.com/yosida95/uritemplate/v3 v3.0.2 // indirect
	golang.org/x/text v0.43.0 // indirect
)

replace github.com/toolgate/toolgate => ../../..

tool github.com/toolgate/toolgate/e2e/bench/cmd/bareserver
