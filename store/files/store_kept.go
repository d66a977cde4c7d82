package files

// openFile is a session file kept open between appends, so an append
// reads only what others added since (Session catches up under its
// lock) instead of parsing the whole file again.
type openFile struct {
	st   *Session
	done func()
	refs int
}

// maxOpenFiles bounds the sessions kept open; beyond it, idle ones are
// closed.
const maxOpenFiles = 64

// kept is open for a session kept open between calls; done gives it
// back.
func (f *Store) kept(name string) (*Session, func(), error) {
	f.mu.Lock()
	if o := f.openFiles[name]; o != nil {
		o.refs++
		f.mu.Unlock()
		return o.st, func() { f.giveBack(o) }, nil
	}
	f.mu.Unlock()
	st, done, err := f.open(name)
	if err != nil {
		return nil, nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if o := f.openFiles[name]; o != nil { // opened meanwhile: use that one
		done()
		o.refs++
		return o.st, func() { f.giveBack(o) }, nil
	}
	if f.openFiles == nil {
		f.openFiles = map[string]*openFile{}
	}
	if len(f.openFiles) >= maxOpenFiles {
		for n, o := range f.openFiles {
			if o.refs == 0 {
				o.done()
				delete(f.openFiles, n)
				break
			}
		}
	}
	o := &openFile{st: st, done: done, refs: 1}
	f.openFiles[name] = o
	return st, func() { f.giveBack(o) }, nil
}

func (f *Store) giveBack(o *openFile) {
	f.mu.Lock()
	o.refs--
	f.mu.Unlock()
}
