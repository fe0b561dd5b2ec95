// Package policy decides what tools may do: the capabilities tools declare,
// the permission policy that allows or denies each call, and the sandbox
// path guards that confine filesystem access.
//
// The pipeline in package gateway asks a [gateway.Policy] about every call;
// this package provides the gateway's policies. The sandbox guards are used
// by the filesystem toolset for every path it touches.
package policy
