// Package proctree keeps a plugin's processes together so they can be ended
// together: the host starts each plugin as the leader of its own process
// group (with a parent-death signal on Linux), and both the host and the
// SDK end a plugin by killing its group and every process descended from
// it, including children that left the group with setsid.
//
// A process that double-forks — leaves the group with setsid and whose
// intermediate parent exits — is re-parented away from the plugin, where
// no walk of its descendants finds it. On Linux the pith command is
// therefore a child subreaper (Subreap): such a process is re-parented to
// pith, which ends it when a plugin stops (EndOrphans) and reaps those
// that exit by themselves. Elsewhere, and in a program that does not call
// Subreap, it escapes; containing it there would need a cgroup or a jail,
// which Pith does not manage.
package proctree
