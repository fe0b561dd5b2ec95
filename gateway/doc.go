// Package gateway is toolgate's core: the tool contract, the one pipeline
// every call goes through, the catalog that aggregates toolsets, and the
// mirror of all of it onto MCP.
//
// # The contract
//
// A [Tool] has a name, a description, an input JSON Schema (checked against
// its metaschema and compiled when the tool is built: a bad schema is an
// error at registration, never at call time) and [Permissions]: the
// capabilities it needs and its behaviour hints. Build one with [NewTool]
// (the handler sees the raw [Call]; adapters use it to pass calls on),
// [NewDynamicTool] (hand-written schema, decoded arguments: the seeds'
// CallableTool), [NewTypedTool] (schema generated from a Go struct,
// decoded struct: the seeds' CallableTool2) or [NewTypedToolOut] (the
// same, with an output schema generated from a second struct and each
// result's structured output checked against it).
//
// Every call ends with a [Result] (the seeds' ToolReturnValue): output parts
// for the model, a message, [DisplayBlock]s for humans (the first
// [BriefBlock] is the brief), extras, structured output, and for failures
// a [Kind]: not found, parse error, invalid arguments, permission denied,
// timeout, cancelled, runtime error, unavailable. Failures are values.
//
// A [Toolset] lists tools; the [Catalog] aggregates toolsets, resolves names
// (renaming deterministically on a conflict, never dropping a tool) and
// follows their changes.
//
// # The pipeline
//
// [Pipeline] composes its stages as middleware, each in a file of its own:
//
//	record.go     record     tool.started, then tool.completed / tool.failed (outermost: sees every outcome)
//	resolve.go    resolve    find the tool, or not found
//	validate.go   validate   decode the arguments, check them against the compiled schema
//	authorize.go  authorize  ask the [Policy]; a refusal names the layer and rule
//	summarize.go  summarize  output over the limit becomes an [Artifact] plus a summary
//	execute.go    execute    run the handler: deadline, cancellation, panic recovery
//
// [Pipeline.Call] blocks; [Pipeline.Start] never does (the seeds'
// Toolset.handle); [Pipeline.Batch] runs many calls at once and returns
// their results in order (the seeds' step()). [Pipeline.Shutdown] drains
// calls in flight and records every one. A running tool reports progress
// with [ReportProgress]; reports of one call are serialized and ordered.
//
// # The mirror onto MCP
//
// [MCPServer] (mcp.go) serves the catalog through mcp-go: schemas pass
// through byte for byte, hints become annotations, results map onto
// tools/call results ([ToMCPResult]; [ResultFromMCP] is the reverse, so a
// toolgate behind a toolgate loses nothing). mcp_transport.go serves it
// over stdio and streamable HTTP, with the HTTP checks (Host, Origin,
// bearer token, body size). MCP tasks: mcp_tasks.go for 2025-11-25
// callers (mcp-go keeps the tasks), mcp_taskext.go for the tasks
// extension of 2026-07-28 (toolgate keeps them; a call of a tool that
// decides itself becomes a task through [BecomeTask], becometask.go).
// mcp-go's types appear in these files only.
//
// The run archive (package gateway/runs) is the pipeline's [Recorder] and
// [ArtifactStore]. Package gateway imports no other package of toolgate:
// the policy, the toolsets and the adapters import it, and cmd/toolgate
// wires them together.
package gateway
