module github.com/speech-infra/speech-infra

go 1.26.0

ignore ./node_modules
