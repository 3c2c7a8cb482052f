package benchkit

import (
	"bytes"
	"fmt"
	"strings"
)

// The charts are hand-written SVG: no plotting dependency.

// SVGHeader returns the opening of a w by h SVG chart, white, in a
// 12-point sans-serif font; the chart ends with "</svg>\n".
func SVGHeader(w, h int) string {
	return fmt.Sprintf(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">
<rect width="100%%" height="100%%" fill="white"/>
`, w, h, w, h)
}

var escaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// Escape returns s fit for the text of an SVG element: &, < and > escaped.
func Escape(s string) string { return escaper.Replace(s) }

// A Bar is one bar of a [BarChart].
type Bar struct {
	Name      string  // to the left of the bar
	Label     string  // to the right of the bar, before the ratio
	Value     float64 // the bar's length, relative to the longest
	Ratio     float64 // printed after the label, as "(1.23x)"
	Highlight bool    // red rather than blue
}

// Bars returns a bar a row of s, in order, for a [BarChart]: the row's
// name, label's text for it, its median value and the median of its
// ratios; the row named highlight is highlighted.
func (s *Section[R]) Bars(highlight string, label func(r R) string) []Bar {
	var bars []Bar
	for _, r := range s.Rows {
		b := r.Base()
		bars = append(bars, Bar{Name: b.Name, Label: label(r), Value: Median(b.Values), Ratio: Median(b.Ratios), Highlight: b.Name == highlight})
	}
	return bars
}

// BarChart draws bars as horizontal bars under title, each as long as its
// Value over the largest (the largest the longest), in a chart w wide with
// left pixels for the names and right for the labels; the chart is as high
// as the bars need. Every text is escaped.
func BarChart(w, left, right int, title string, bars []Bar) []byte {
	const top, height, gap = 40, 22, 10
	h := top + len(bars)*(height+gap) + 30
	var b bytes.Buffer
	b.WriteString(SVGHeader(w, h))
	fmt.Fprintf(&b, "<text x=\"10\" y=\"22\" font-size=\"14\">%s</text>\n", Escape(title))
	hi := 0.0
	for _, x := range bars {
		hi = max(hi, x.Value)
	}
	for i, x := range bars {
		y := top + i*(height+gap)
		color := "#1f77b4"
		if x.Highlight {
			color = "#d62728"
		}
		bw := 0.0
		if hi > 0 {
			bw = x.Value / hi * float64(w-left-right)
		}
		fmt.Fprintf(&b, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>\n", left-8, y+height-6, Escape(x.Name))
		fmt.Fprintf(&b, "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>\n", left, y, bw, height, color)
		fmt.Fprintf(&b, "<text x=\"%.1f\" y=\"%d\">%s (%.2fx)</text>\n", float64(left)+bw+6, y+height-6, Escape(x.Label), x.Ratio)
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}
