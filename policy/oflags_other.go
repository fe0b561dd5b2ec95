//go:build !unix

package policy

// oNoFollow is none where the system has no O_NOFOLLOW: os.Root still
// keeps every step inside the root.
const oNoFollow = 0
