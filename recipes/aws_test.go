package recipes_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/httpretry/httpretry"
)

// fakeS3 is a path-style S3 endpoint that answers 503 SlowDown to the first
// call of each operation and logs every call it gets.
type fakeS3 struct {
	mu   sync.Mutex
	seen map[string]bool
	log  []string
}

func newFakeS3() (*fakeS3, *httptest.Server) {
	f := &fakeS3{seen: map[string]bool{}}
	return f, httptest.NewServer(f)
}

func (f *fakeS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n, _ := io.Copy(io.Discard, r.Body) // the whole upload, as S3 reads it
	q := r.URL.Query()
	var op, answer string
	switch {
	case r.Method == http.MethodPut && q.Has("partNumber"):
		op = "UploadPart"
		w.Header().Set("ETag", `"etag-1"`)
	case r.Method == http.MethodPut:
		op = "PutObject"
		w.Header().Set("ETag", `"etag-1"`)
	case r.Method == http.MethodPost && q.Has("uploads"):
		op = "CreateMultipartUpload"
		answer = `<InitiateMultipartUploadResult><Bucket>b</Bucket><Key>k</Key><UploadId>u1</UploadId></InitiateMultipartUploadResult>`
	case r.Method == http.MethodPost && q.Has("uploadId"):
		op = "CompleteMultipartUpload"
		answer = `<CompleteMultipartUploadResult><Bucket>b</Bucket><Key>k</Key><ETag>"etag-2"</ETag></CompleteMultipartUploadResult>`
	case r.Method == http.MethodPost && q.Has("delete"):
		op = "DeleteObjects"
		answer = `<DeleteResult><Deleted><Key>k</Key></Deleted></DeleteResult>`
	default:
		http.Error(w, "not faked", http.StatusNotImplemented)
		return
	}

	f.mu.Lock()
	first := !f.seen[op]
	f.seen[op] = true
	status := http.StatusOK
	if first {
		status = http.StatusServiceUnavailable
	}
	entry := fmt.Sprintf("%s %d", op, status)
	if r.Method == http.MethodPut {
		entry += fmt.Sprintf(" (%d bytes received)", n)
	}
	f.log = append(f.log, entry)
	f.mu.Unlock()

	if first {
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(status)
		io.WriteString(w, `<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`)
		return
	}
	io.WriteString(w, answer)
}

func (f *fakeS3) print() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, l := range f.log {
		fmt.Println(" ", l)
	}
	f.log = nil
}

// newS3 is the recipe: an S3 client whose only resends are httpretry's.
func newS3(endpoint string, p httpretry.Policy) (*s3.Client, *httpretry.RetryTransport) {
	base := http.DefaultTransport.(*http.Transport).Clone()
	// PerTryTimeout would count the upload's own time; this bounds only
	// the wait for the answer once the body is sent.
	base.ResponseHeaderTimeout = 30 * time.Second
	rt := httpretry.New(base, httpretry.WithPolicy(p))
	return s3.New(s3.Options{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", ""),
		BaseEndpoint: aws.String(endpoint),
		UsePathStyle: true,
		HTTPClient:   &http.Client{Transport: rt},
		Retryer:      aws.NopRetryer{}, // the SDK's own retries off
	}), rt
}

// statusOf is the HTTP status of an SDK error, 0 if it has none.
func statusOf(err error) int {
	var re interface{ HTTPStatusCode() int }
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// Example_awsS3Upload shows that the SDK sets no GetBody: a PUT is resent
// only when its body fits MaxReplayBytes, recorded as it is first sent.
func Example_awsS3Upload() {
	ctx := context.Background()
	part := bytes.Repeat([]byte("x"), 5<<20) // S3's smallest part size

	for _, c := range []struct {
		name      string
		maxReplay int64
	}{
		{"MaxReplayBytes 1 MiB (the default)", 0},
		{"MaxReplayBytes 8 MiB", 8 << 20},
	} {
		fake, srv := newFakeS3()
		p := quickPolicy()
		p.MaxReplayBytes = c.maxReplay
		client, rt := newS3(srv.URL, p)

		_, err := client.PutObject(ctx, &s3.PutObjectInput{
			Bucket: aws.String("b"),
			Key:    aws.String("k"),
			Body:   bytes.NewReader(part),
		})
		status := http.StatusOK
		if err != nil {
			status = statusOf(err)
		}
		fmt.Printf("%s: PutObject status %d\n", c.name, status)
		fake.print()

		rt.CloseIdleConnections()
		srv.Close()
	}
	// Output:
	// MaxReplayBytes 1 MiB (the default): PutObject status 503
	//   PutObject 503 (5242880 bytes received)
	// MaxReplayBytes 8 MiB: PutObject status 200
	//   PutObject 503 (5242880 bytes received)
	//   PutObject 200 (5242880 bytes received)
}

// Example_awsS3Multipart shows which S3 calls sent as POST may be resent:
// CompleteMultipartUpload and DeleteObjects with WithIdempotent, never
// CreateMultipartUpload, whose lost answer would leave an upload that nobody
// completes or aborts.
func Example_awsS3Multipart() {
	ctx := context.Background()
	fake, srv := newFakeS3()
	defer srv.Close()
	client, rt := newS3(srv.URL, quickPolicy())
	defer rt.CloseIdleConnections()

	in := &s3.CreateMultipartUploadInput{Bucket: aws.String("b"), Key: aws.String("k")}
	_, err := client.CreateMultipartUpload(ctx, in)
	fmt.Println("create:", statusOf(err), "(not resent; the caller decides)")
	created, err := client.CreateMultipartUpload(ctx, in)
	if err != nil {
		fmt.Println(err)
		return
	}

	part, err := client.UploadPart(ctx, &s3.UploadPartInput{
		Bucket: aws.String("b"), Key: aws.String("k"), UploadId: created.UploadId,
		PartNumber: aws.Int32(1),
		Body:       strings.NewReader("last part, smaller than 5 MiB"),
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	_, err = client.CompleteMultipartUpload(httpretry.WithIdempotent(ctx), &s3.CompleteMultipartUploadInput{
		Bucket: aws.String("b"), Key: aws.String("k"), UploadId: created.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{
			{ETag: part.ETag, PartNumber: aws.Int32(1)},
		}},
	})
	fmt.Println("complete:", err)

	_, err = client.DeleteObjects(httpretry.WithIdempotent(ctx), &s3.DeleteObjectsInput{
		Bucket: aws.String("b"),
		Delete: &types.Delete{Objects: []types.ObjectIdentifier{{Key: aws.String("k")}}},
	})
	fmt.Println("delete:", err)
	fake.print()
	// Output:
	// create: 503 (not resent; the caller decides)
	// complete: <nil>
	// delete: <nil>
	//   CreateMultipartUpload 503
	//   CreateMultipartUpload 200
	//   UploadPart 503 (29 bytes received)
	//   UploadPart 200 (29 bytes received)
	//   CompleteMultipartUpload 503
	//   CompleteMultipartUpload 200
	//   DeleteObjects 503
	//   DeleteObjects 200
}
