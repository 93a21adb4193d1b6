module github.com/kobune/kobune

go 1.26.0

require (
	github.com/google/go-cmp v0.7.0
	sigs.k8s.io/yaml v1.6.0
)

require (
	go.yaml.in/yaml/v2 v2.4.4 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)
