package series

import "strconv"

// Keys builds the series' Redis key names, under the same prefix as the
// task records' (taskstate.Keys). None carries a principal's hash tag: the
// numbers are the whole fleet's.
type Keys struct {
	// Prefix starts every name.
	Prefix string
}

// Minute is one minute's counters and samples: field name (fields.go) →
// integer. minute is unix time / 60. It expires Retention after the
// minute began. Type: hash.
func (k Keys) Minute(minute int64) string {
	return k.Prefix + "series:" + strconv.FormatInt(minute, 10)
}
