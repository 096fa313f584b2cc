package conformance

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"image"
	"image/color"
	"image/png"

	"github.com/mcpq/mcpq/proto"
)

// Media the fixtures return, built once: a 1×1 red PNG and a short silent
// 16-bit mono WAV, both base64 as content blocks carry them.
var (
	pngBase64 = base64.StdEncoding.EncodeToString(redPixelPNG())
	wavBase64 = base64.StdEncoding.EncodeToString(silentWAV(8000, 4))
)

// redPixelPNG encodes a 1×1 opaque red image.
func redPixelPNG() []byte {
	img := image.NewNRGBA(image.Rect(0, 0, 1, 1))
	img.Set(0, 0, color.NRGBA{R: 0xff, A: 0xff})
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		panic("conformance: encode PNG: " + err.Error())
	}
	return buf.Bytes()
}

// silentWAV is a PCM WAV file (mono, 16 bit) of n zero samples at rate Hz.
func silentWAV(rate, n int) []byte {
	const channels, bits = 1, 16
	data := n * channels * bits / 8
	var buf bytes.Buffer
	w := func(v any) { _ = binary.Write(&buf, binary.LittleEndian, v) }
	buf.WriteString("RIFF")
	w(uint32(36 + data))
	buf.WriteString("WAVEfmt ")
	w(uint32(16))                         // fmt chunk size
	w(uint16(1))                          // PCM
	w(uint16(channels))                   // channels
	w(uint32(rate))                       // sample rate
	w(uint32(rate * channels * bits / 8)) // byte rate
	w(uint16(channels * bits / 8))        // block align
	w(uint16(bits))                       // bits per sample
	buf.WriteString("data")
	w(uint32(data))
	buf.Write(make([]byte, data))
	return buf.Bytes()
}

// imageContent is the red pixel as an image block.
func imageContent() proto.Content {
	return proto.Content{Type: "image", Data: pngBase64, MimeType: "image/png"}
}

// audioContent is the silent WAV as an audio block.
func audioContent() proto.Content {
	return proto.Content{Type: "audio", Data: wavBase64, MimeType: "audio/wav"}
}

// embeddedText is a resource block embedding a text resource.
func embeddedText(uri, mimeType, text string) proto.Content {
	rc := proto.ResourceContents{URI: uri, MimeType: mimeType, Text: &text}
	b, err := json.Marshal(rc)
	if err != nil {
		panic("conformance: encode embedded resource: " + err.Error())
	}
	return proto.Content{Type: "resource", Resource: b}
}
