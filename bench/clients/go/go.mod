module github.com/abuseguard/abuseguard/bench/clients/go

go 1.19

require github.com/abuseguard/abuseguard/clients/go v0.0.0

replace github.com/abuseguard/abuseguard/clients/go => ../../../clients/go
