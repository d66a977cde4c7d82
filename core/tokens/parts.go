package tokens

// MessageParts are the measures Chars takes from a message, gathered by a
// caller that scans the message anyway: the session scanner, which reads
// every line once when a session opens. Measuring there, while the bytes
// are in cache, spares calibration a second walk over every message of
// the range (docs/behaviour.md §5.3). The role decides what counts, and it
// may come after the content, so every role's sum over the blocks is
// kept. Chars is the reference: the two must agree on every valid message.
type MessageParts struct {
	// Role is the first "role" value decoded, "" when not a string.
	Role string
	// ContentIsString: the first "content" is a string of ContentUnits
	// UTF-16 units.
	ContentIsString bool
	ContentUnits    int
	// The sums over the first content's blocks, as a user, an assistant,
	// and a tool result or custom message count them.
	UserBlocks, AssistantBlocks, ResultBlocks int
	// The units of the first "command", "output" and "summary" strings.
	Command, Output, Summary int
}

// BlockParts are one content block's measures: the first value of each key
// Chars reads in a block. Text, Thinking and Name are UTF-16 units (0 for a
// value that is not a string); Arguments is the StringifiedLen of the first
// "arguments", 0 when there is none (any value prints at least one unit).
type BlockParts struct {
	Type                            string
	Text, Thinking, Name, Arguments int
}

// AddBlock adds a content block to every role's sum.
func (m *MessageParts) AddBlock(b BlockParts) {
	m.UserBlocks += blockChars(b, userBlocks)
	m.AssistantBlocks += blockChars(b, assistantBlocks)
	m.ResultBlocks += blockChars(b, resultBlocks)
}

// Chars is what Chars returns for the message the parts were taken from.
func (m *MessageParts) Chars() int {
	switch m.Role {
	case "user":
		if m.ContentIsString {
			return m.ContentUnits
		}
		return m.UserBlocks
	case "assistant":
		return m.AssistantBlocks
	case "toolResult", "custom":
		if m.ContentIsString {
			return m.ContentUnits
		}
		return m.ResultBlocks
	case "bashExecution":
		return m.Command + m.Output
	case "branchSummary", "compactionSummary":
		return m.Summary
	}
	return 0
}

// blockChars is what one content block counts for, by the kind of its
// message: the one rule Chars and MessageParts share.
func blockChars(b BlockParts, kind blockKind) int {
	switch t := b.Type; {
	case t == "text":
		return b.Text
	case kind == assistantBlocks && t == "thinking":
		return b.Thinking
	case kind == assistantBlocks && t == "toolCall":
		return b.Name + b.Arguments
	case kind == resultBlocks && t == "image":
		return ImageChars
	}
	return 0
}

// StringUnits is the UTF-16 length of the decoded text of a JSON string
// given without its quotes, escapes and all: what Chars counts for a
// string value.
func StringUnits(content []byte) int { return decodedUnits(unsafeString(content)) }
