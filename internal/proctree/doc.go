// Package proctree keeps a plugin's processes together so they can be ended
// together: the host starts each plugin as the leader of its own process
// group (with a parent-death signal on Linux), and both the host and the
// SDK end a plugin by killing its group and every process descended from
// it, including children that left the group with setsid.
//
// A process that double-forks and whose intermediate parent exits before
// the kill is re-parented to init and is no longer found as a descendant;
// containing those needs a cgroup, which Pith does not manage.
package proctree
