import MemPressureCommands
import MemPressureSystem

// Every command without the HTTP stack (`mempressure` becomes this program for all but the
// quickest lines): `export` and `supervise --export` execute mempressure-server (beside this
// program) with the same arguments. Named as the program the user ran (its comm, which ps, top
// and the supervisor's own app name show), not "mempressure-com", this file's name cut to 15 bytes.
do {
    try ProcFS.writeFileInPlace("/proc/self/comm", Array("mempressure".utf8))
} catch {
    // No /proc to write to: the name stays the file's, nothing else changes.
}
MempressureCommandLine.main()
