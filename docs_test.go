package main

// The pages whose tables and examples run as tests: the README's exit-code
// table (exitcodes_test.go), docs/roles.md's ACL rules (roles_test.go),
// docs/claim-run.md's consumer loop (readme_loop_test.go).
const (
	rolesDoc    = "docs/roles.md"
	claimRunDoc = "docs/claim-run.md"
)
