// Package demo is mcpq's default tool pack: real long-running tools for a
// first try. render_gif renders an animated GIF with the standard library,
// one step per frame, so progress and cancellation are real.
package demo

import (
	"bytes"
	"context"
	"encoding/base64"
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
	t := worker.NewTool("render_gif", "Renders an animated plasma GIF, one frame per step. `frames` (1-600, default 24), "+
		"`size` in pixels (16-512, default 128), `frameMs`: minimum render time per frame "+
		"(0-10000, default 250) so progress and cancellation can be watched.", renderGIF)
	t.Title, t.PollInterval, t.TTL = "Render an animated GIF", time.Second, time.Hour
	return []worker.Tool{t}
}

// GIFArgs are render_gif's arguments; the front end checks the bounds
// against the schema inferred from the tags before the task exists.
type GIFArgs struct {
	Frames  *int `json:"frames,omitempty" jsonschema:"frames to render (default 24)" mcpq:"minimum=1,maximum=600"`
	Size    *int `json:"size,omitempty" jsonschema:"width and height in pixels (default 128)" mcpq:"minimum=16,maximum=512"`
	FrameMs *int `json:"frameMs,omitempty" jsonschema:"minimum render time per frame in ms (default 250)" mcpq:"minimum=0,maximum=10000"`
}

// or is *v, or def when v is absent (or null).
func or(v *int, def int) int {
	if v == nil {
		return def
	}
	return *v
}

func renderGIF(ctx context.Context, c *worker.Call, a GIFArgs) (*proto.CallToolResult, error) {
	frames, size, frameMs := or(a.Frames, 24), or(a.Size, 128), or(a.FrameMs, 250)
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
