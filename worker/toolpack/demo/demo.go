// Package demo is mcpq's default tool pack: real long-running tools for a
// first try. render_gif renders an animated GIF with the standard library,
// one step per frame, so progress and cancellation are real.
package demo

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"math"
	"time"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/worker"
)

// Tools returns the pack.
func Tools() []worker.Tool {
	return []worker.Tool{{
		Name:  "render_gif",
		Title: "Render an animated GIF",
		Description: "Renders an animated plasma GIF, one frame per step. `frames` (1-600, default 24), " +
			"`size` in pixels (16-512, default 128), `frameMs`: minimum render time per frame " +
			"(0-10000, default 250) so progress and cancellation can be watched.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"frames":{"type":"integer","minimum":1,"maximum":600},` +
			`"size":{"type":"integer","minimum":16,"maximum":512},` +
			`"frameMs":{"type":"integer","minimum":0,"maximum":10000}}}`),
		PollInterval: time.Second,
		TTL:          time.Hour,
		Handler:      renderGIF,
	}}
}

type gifArgs struct {
	Frames  *int `json:"frames"`
	Size    *int `json:"size"`
	FrameMs *int `json:"frameMs"`
}

func intArg(name string, v *int, def, lo, hi int) (int, error) {
	if v == nil {
		return def, nil
	}
	if *v < lo || *v > hi {
		return 0, proto.NewError(proto.CodeInvalidParams, "Invalid arguments: %s must be from %d to %d", name, lo, hi)
	}
	return *v, nil
}

func renderGIF(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
	var a gifArgs
	if err := c.Bind(&a); err != nil {
		return nil, err
	}
	frames, err := intArg("frames", a.Frames, 24, 1, 600)
	if err != nil {
		return nil, err
	}
	size, err := intArg("size", a.Size, 128, 16, 512)
	if err != nil {
		return nil, err
	}
	frameMs, err := intArg("frameMs", a.FrameMs, 250, 0, 10000)
	if err != nil {
		return nil, err
	}
	pal := palette()
	anim := &gif.GIF{}
	for i := range frames {
		err := c.Step(ctx, func(ctx context.Context) error {
			start := time.Now()
			anim.Image = append(anim.Image, plasma(size, float64(i)/float64(frames), pal))
			anim.Delay = append(anim.Delay, 8)
			return worker.Sleep(ctx, time.Duration(frameMs)*time.Millisecond-time.Since(start))
		})
		if err != nil {
			return nil, err
		}
		if err := c.Progress(ctx, fmt.Sprintf("Rendered frame %d of %d", i+1, frames)); err != nil {
			return nil, err
		}
	}
	var buf bytes.Buffer
	if err := gif.EncodeAll(&buf, anim); err != nil {
		return nil, fmt.Errorf("encode gif: %w", err)
	}
	return &proto.CallToolResult{Content: []proto.Content{
		{Type: "image", MimeType: "image/gif", Data: base64.StdEncoding.EncodeToString(buf.Bytes())},
		proto.TextContent(fmt.Sprintf("Rendered %d frames of %dx%d (%d bytes of GIF).", frames, size, size, buf.Len())),
	}}, nil
}

func palette() color.Palette {
	p := make(color.Palette, 256)
	for i := range p {
		f := float64(i) / 256 * 2 * math.Pi
		p[i] = color.RGBA{R: uint8(128 + 127*math.Sin(f)), G: uint8(128 + 127*math.Sin(f+2.094)),
			B: uint8(128 + 127*math.Sin(f+4.188)), A: 255}
	}
	return p
}

// plasma draws one frame at phase t in [0,1).
func plasma(size int, t float64, pal color.Palette) *image.Paletted {
	img := image.NewPaletted(image.Rect(0, 0, size, size), pal)
	ph := t * 2 * math.Pi
	for y := range size {
		for x := range size {
			fx, fy := float64(x)/float64(size)*8, float64(y)/float64(size)*8
			v := math.Sin(fx+ph) + math.Sin(fy+ph) + math.Sin((fx+fy)/2+ph) + math.Sin(math.Hypot(fx-4, fy-4)+ph)
			img.SetColorIndex(x, y, uint8(int((v+4)/8*255)&0xff))
		}
	}
	return img
}
