module github.com/speech-infra/speech-infra/container

go 1.26.0

require github.com/yalue/onnxruntime_go v1.27.0
