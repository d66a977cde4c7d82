package session

// Settings are the model and the thinking level in effect at an entry:
// the nearest model_change or assistant message and the nearest
// thinking_level_change on its path (docs/behaviour.md §2), "off" when there is none.
type Settings struct {
	Provider, Model string
	ThinkingLevel   string
}

// settingsCacheMax bounds the cache of Tree.Settings. A daemon asks for
// the leaf it just appended, whose parent is the leaf it asked for last,
// so a small cache answers almost every call in one step; clearing it
// when full keeps its memory flat however long the session grows.
const settingsCacheMax = 1024

// leafState is a walk's outcome before the defaults: what was found.
type leafState struct {
	provider, model, thinking string
	haveModel, haveThinking   bool
}

// Settings returns the settings in effect at leaf (the defaults for nil).
// It walks towards the root only until it has both values or reaches an
// entry it answered before, so a leaf that follows the previous one costs
// one step instead of a walk over the whole session.
func (t *Tree) Settings(leaf *Entry) Settings {
	t.settingsMu.Lock()
	defer t.settingsMu.Unlock()
	var st leafState
	// The step bound guards against a parent cycle in a damaged file; a
	// walk that hits it is not cached.
	steps := len(t.Entries) + 1
	for e := leaf; e != nil && !(st.haveModel && st.haveThinking); steps-- {
		if steps == 0 {
			return st.settings()
		}
		if c, ok := t.settings[e]; ok {
			if !st.haveModel {
				st.provider, st.model, st.haveModel = c.provider, c.model, c.haveModel
			}
			if !st.haveThinking {
				st.thinking, st.haveThinking = c.thinking, c.haveThinking
			}
			break
		}
		switch e.Type {
		case TypeThinkingLevelChange:
			if !st.haveThinking {
				st.thinking, st.haveThinking = e.Get("thinkingLevel").String(), true
			}
		case TypeModelChange:
			if !st.haveModel {
				st.provider, st.model, st.haveModel = e.Get("provider").String(), e.Get("modelId").String(), true
			}
		case TypeMessage:
			if !st.haveModel && e.Role() == RoleAssistant {
				st.provider, st.model = e.MessageModel()
				st.haveModel = true
			}
		}
		if e.ParentID == "" {
			break
		}
		e = t.Get(e.ParentID)
	}
	if leaf != nil {
		if t.settings == nil || len(t.settings) >= settingsCacheMax {
			t.settings = make(map[*Entry]leafState)
		}
		t.settings[leaf] = st
	}
	return st.settings()
}

func (st leafState) settings() Settings {
	s := Settings{Provider: st.provider, Model: st.model, ThinkingLevel: st.thinking}
	if !st.haveThinking {
		s.ThinkingLevel = "off"
	}
	return s
}

// forgetSettings drops the cache: an added entry that reuses an id
// changes which entry that id names, and so the walks through it.
func (t *Tree) forgetSettings() {
	t.settingsMu.Lock()
	t.settings = nil
	t.settingsMu.Unlock()
}
