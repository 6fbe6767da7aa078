// Command speech-infra-cdk is the CDK app of speech-infra: it reads context, loads the model catalog and
// synthesizes SpeechFoundationStack and the selected model's endpoint stack.
//
//	npx cdk synth -c model=kokoro-82m
//	npx cdk synth -c model=kokoro-82m -c instance_type=ml.g6.xlarge   (deploy another type than the catalog's)
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/models"
	"github.com/speech-infra/speech-infra/stacks"
)

func main() {
	defer jsii.Close()
	app := awscdk.NewApp(nil)
	cfg, err := configFromContext(app)
	if err != nil {
		fmt.Fprintln(os.Stderr, "speech-infra synth:", err)
		jsii.Close()
		os.Exit(1)
	}
	stacks.Build(app, cfg)
	app.Synth(nil)
}

// configFromContext resolves context (-c model=..., -c catalog=..., -c plan=..., -c instance_type=...,
// -c autoscaling=...) and the CDK environment variables into
// the app configuration. Nothing below main reads context or environment.
func configFromContext(app awscdk.App) (stacks.AppConfig, error) {
	modelID := contextString(app, "model", models.DefaultModel)
	catalogDir := contextString(app, "catalog", "models")
	cat, err := models.Load(os.DirFS(catalogDir))
	if err != nil {
		return stacks.AppConfig{}, fmt.Errorf("load model catalog from %s/: %w", catalogDir, err)
	}
	m, err := cat.Get(modelID)
	if err != nil {
		return stacks.AppConfig{}, fmt.Errorf("context model: %w (pass -c model=<id>)", err)
	}
	cfg := stacks.AppConfig{Model: m, ContainerDir: contextString(app, "containerDir", "container")}
	if _, err := os.Stat(filepath.Join(cfg.ContainerDir, "Dockerfile")); err != nil {
		return stacks.AppConfig{}, fmt.Errorf("context containerDir: no Dockerfile in %s/: run synthesis from the repository root or pass -c containerDir=<dir>", cfg.ContainerDir)
	}
	digest, files, err := capacity.SourceDigestFiles(cfg.ContainerDir)
	if err != nil {
		return stacks.AppConfig{}, fmt.Errorf("digest of the container source %s/: %w", cfg.ContainerDir, err)
	}
	cfg.ContainerDigest, cfg.ContainerNote = digest, files.UntrackedNote()
	cfg.PlanPath = contextString(app, "plan", capacity.DefaultPlanPath(m.ID))
	if v := contextString(app, "instance_type", ""); v != "" {
		if err := capacity.ValidInstanceType(v); err != nil {
			return stacks.AppConfig{}, fmt.Errorf("context instance_type (-c instance_type): %w: pass -c instance_type=<type> with a SageMaker endpoint type such as ml.g6.xlarge (the one your plan was measured on, tts-bench plan prints it), or leave it out to deploy the catalog's %s", err, m.InstanceType)
		}
		cfg.InstanceType = v
	}
	switch v := contextString(app, "autoscaling", ""); v {
	case "":
	case "true", "false":
		on := v == "true"
		cfg.AutoscalingOverride = &on
	default:
		return stacks.AppConfig{}, fmt.Errorf("context autoscaling: %q is not a boolean: pass -c autoscaling=true or -c autoscaling=false", v)
	}
	account, region := os.Getenv("CDK_DEFAULT_ACCOUNT"), os.Getenv("CDK_DEFAULT_REGION")
	if account != "" && region != "" {
		cfg.Env = &awscdk.Environment{Account: jsii.String(account), Region: jsii.String(region)}
	}
	return cfg, nil
}

// contextString returns a context value as a string, or def when it is not set.
func contextString(app awscdk.App, key, def string) string {
	v := app.Node().TryGetContext(jsii.String(key))
	if v == nil {
		return def
	}
	if s, ok := v.(string); ok && s != "" {
		return s
	}
	return fmt.Sprint(v)
}
