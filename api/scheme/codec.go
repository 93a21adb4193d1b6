package scheme

import (
	"bytes"

	gojson "github.com/goccy/go-json"

	"github.com/kobune/kobune/api/meta"
)

// The API server decodes every object it is sent and encodes every object it
// stores; with encoding/json those two steps were a third of its work per
// create. They use github.com/goccy/go-json instead, a drop-in replacement
// that reads the same struct tags and calls the same (Un)MarshalJSON methods
// about twice as fast. (Kubernetes made the same trade for years with
// json-iterator.) It is kept to two narrow uses, each checked against
// encoding/json by FuzzCodecAgreesWithEncodingJSON and its corpus:
//
//   - fastDecodeStrict is only a fast path: when it refuses the input for any
//     reason, DecodeStrict decodes again with encoding/json, so errors and
//     warnings are encoding/json's as before;
//   - Encode must write the same bytes as json.Marshal.
//
// Everything else (clients, kobectl, controllers) uses encoding/json.

// fastDecodeStrict decodes data into o and fails on any field o's type
// does not have, and on anything after the value.
func fastDecodeStrict(data []byte, o meta.Object) error {
	if disallowUnknownFields == nil {
		return slowDecodeStrict(data, o)
	}
	return gojson.UnmarshalWithOption(data, o, disallowUnknownFields)
}

// disallowUnknownFields is the option for goccy's Unmarshal that its stream
// Decoder sets with DisallowUnknownFields (Unmarshal has no exported
// option for it, and is a third faster than the stream Decoder: no copy of
// the input into a buffer). It is read from a Decoder once; nil if that
// ever stops working, and then the stream Decoder is used.
var disallowUnknownFields = func() gojson.DecodeOptionFunc {
	var plain, strict gojson.DecodeOption
	d := gojson.NewDecoder(bytes.NewReader([]byte("{}")))
	_ = d.DecodeWithOption(&struct{}{}, func(o *gojson.DecodeOption) { plain = *o })
	d = gojson.NewDecoder(bytes.NewReader([]byte("{}")))
	d.DisallowUnknownFields()
	_ = d.DecodeWithOption(&struct{}{}, func(o *gojson.DecodeOption) { strict = *o })
	flag := strict.Flags &^ plain.Flags
	if flag == 0 {
		return nil
	}
	opt := func(o *gojson.DecodeOption) { o.Flags |= flag }
	var probe struct{ A int }
	if gojson.UnmarshalWithOption([]byte(`{"B":1}`), &probe, opt) == nil {
		return nil // the flag does not refuse unknown fields
	}
	return opt
}()

// slowDecodeStrict is fastDecodeStrict with goccy's stream Decoder.
func slowDecodeStrict(data []byte, o meta.Object) error {
	dec := gojson.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(o); err != nil {
		return err
	}
	// encoding/json's Unmarshal refuses anything after the value; a stream
	// decoder leaves it for the next call, so check here.
	if dec.More() || len(bytes.TrimSpace(data[dec.InputOffset():])) > 0 {
		return errTrailingData
	}
	return nil
}

type codecError string

func (e codecError) Error() string { return string(e) }

const errTrailingData = codecError("data after the JSON value")

// DecodeFast unmarshals JSON the API server wrote itself (stored objects)
// into a new object of kind k, like Decode, with the fast decoder first.
func (k *Kind) DecodeFast(data []byte) (meta.Object, error) {
	o := k.New()
	if fastDecodeStrict(data, o) != nil {
		return k.Decode(data)
	}
	*o.GetTypeMeta() = meta.TypeMeta{APIVersion: k.APIVersion, Kind: k.Kind}
	return o, nil
}

// Encode returns o's JSON exactly as json.Marshal writes it, faster. The API
// server stores and serves objects in this form.
func Encode(o any) ([]byte, error) { return gojson.Marshal(o) }
