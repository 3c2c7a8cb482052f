module github.com/filetxn/filetxn

go 1.26.0

require (
	github.com/google/renameio/v2 v2.0.2
	github.com/stretchr/testify v1.12.1
	go.yaml.in/yaml/v3 v3.0.6
	golang.org/x/sys v0.50.0
	pgregory.net/rapid v1.3.0
)

