module github.com/abuseguard/abuseguard/clients/go

go 1.19
