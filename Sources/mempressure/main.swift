import MemPressureCommands

// The commands without the HTTP stack: `export` and `supervise --export` execute
// mempressure-server (beside this program) with the same arguments.
MempressureCommandLine.main()
