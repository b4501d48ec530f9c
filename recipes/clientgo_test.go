package recipes_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/httpretry/httpretry"
)

// fakeAPIServer answers 503 with Retry-After: 0, as an API server that is
// shutting down does, to its first `failures` calls, then a list of one pod.
func fakeAPIServer(failures int32, calls *atomic.Int32) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= failures {
			w.Header().Set("Retry-After", "0")
			http.Error(w, "shutting down", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"kind":"PodList","apiVersion":"v1","items":[{"metadata":{"name":"web-0"}}]}`)
	}))
}

// dropRetryAfter removes Retry-After from the answer httpretry returns once
// it has made its attempts. client-go resends a 429 or 5xx only when it
// carries Retry-After, so without the header it resends none of them.
type dropRetryAfter struct{ next http.RoundTripper }

func (d dropRetryAfter) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := d.next.RoundTrip(r)
	if resp != nil {
		resp.Header.Del("Retry-After")
	}
	return resp, err
}

// withHTTPRetry is the recipe: httpretry inside client-go's transport, and
// client-go's own resends of 429 and 5xx answers turned off.
func withHTTPRetry(p httpretry.Policy) func(http.RoundTripper) http.RoundTripper {
	return func(rt http.RoundTripper) http.RoundTripper {
		return dropRetryAfter{httpretry.New(rt, httpretry.WithPolicy(p))}
	}
}

// listPods lists the pods of the default namespace through config.
func listPods(config *rest.Config) (int, error) {
	cs, err := kubernetes.NewForConfig(config)
	if err != nil {
		return 0, err
	}
	pods, err := cs.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	return len(pods.Items), nil
}

// Example_clientGo shows a pod list through httpretry, the API server
// failing twice first.
func Example_clientGo() {
	var calls atomic.Int32
	srv := fakeAPIServer(2, &calls)
	defer srv.Close()

	p := quickPolicy()
	n, err := listPods(&rest.Config{Host: srv.URL, WrapTransport: withHTTPRetry(p)})
	fmt.Println(n, "pod, error", err, "after", calls.Load(), "calls")
	// Output: 1 pod, error <nil> after 3 calls
}

// Example_clientGoOutage shows client-go's resends stacking on httpretry's
// against an API server that answers 503 with Retry-After to every call.
func Example_clientGoOutage() {
	p := quickPolicy()
	p.MaxRetries = 2
	// Off only so that the counts are plain arithmetic: 33 is client-go's
	// 11 attempts times httpretry's 3. Keep the budget on in production.
	p.Budget.Disabled = true

	for _, c := range []struct {
		name string
		wrap func(http.RoundTripper) http.RoundTripper
	}{
		{"httpretry alone in WrapTransport", func(rt http.RoundTripper) http.RoundTripper {
			return httpretry.New(rt, httpretry.WithPolicy(p))
		}},
		{"with client-go's resends off", withHTTPRetry(p)},
	} {
		var calls atomic.Int32
		srv := fakeAPIServer(1000, &calls)
		_, err := listPods(&rest.Config{Host: srv.URL, WrapTransport: c.wrap})
		fmt.Printf("%s: %d calls for one list (failed: %v)\n", c.name, calls.Load(), err != nil)
		srv.Close()
	}
	// Output:
	// httpretry alone in WrapTransport: 33 calls for one list (failed: true)
	// with client-go's resends off: 3 calls for one list (failed: true)
}
