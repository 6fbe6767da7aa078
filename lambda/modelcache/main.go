// Command modelcache is the Lambda function of SpeechModelCacheStack-<model> (provided.al2023, arm64). It
// serves the CDK custom resource provider as both its onEvent and its isComplete handler: Create and Update
// run modelsync.Sync from the Hugging Face Hub into the weights bucket until a margin before the
// invocation's deadline, and report IsComplete false while files remain, so that the provider's next
// isComplete invocation resumes where this one stopped; Delete leaves the objects in place.
//
// It is built during synthesis by stacks.GoBuild:
//
//	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 go build -tags lambda.norpc -o bootstrap ./lambda/modelcache
package main

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
)

func main() {
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		fmt.Fprintf(os.Stderr, "modelcache: load the AWS configuration: %v: the Lambda runtime provides region and credentials; check the function's role\n", err)
		os.Exit(1)
	}
	h := &Handler{
		S3:      s3.NewFromConfig(cfg),
		Secrets: secretsmanager.NewFromConfig(cfg),
		Logf:    log.New(os.Stdout, "", 0).Printf,
	}
	lambda.Start(h.Handle)
}
