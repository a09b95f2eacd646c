module github.com/shale-io/shale

go 1.26.0
