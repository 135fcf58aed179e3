package live

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// textFormat is Prometheus's text exposition format, which /metrics
// serves whatever the scraper asks: every Prometheus reads it.
var textFormat = expfmt.NewFormat(expfmt.TypeTextPlain)

// encodeText is families in the text format, gzipped where zipped says.
func encodeText(families []*dto.MetricFamily, zipped bool) ([]byte, error) {
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, textFormat)
	for _, f := range families {
		if err := enc.Encode(f); err != nil {
			return nil, err
		}
	}
	if zipped {
		return gzipped(buf.Bytes())
	}
	return buf.Bytes(), nil
}

// gzipped is b as one gzip member: members concatenated are one stream
// to a reader (Prometheus's, Go's), so that a scrape's own metrics and the
// report's, compressed apart, make one body.
func gzipped(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// acceptsGzip says whether r's client takes a gzipped body.
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.TrimSpace(coding) == "gzip" && strings.ReplaceAll(params, " ", "") != "q=0" {
			return true
		}
	}
	return false
}
