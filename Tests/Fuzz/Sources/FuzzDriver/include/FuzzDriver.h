#ifndef FUZZ_DRIVER_H
#define FUZZ_DRIVER_H

/// Runs libFuzzer (LLVMFuzzerRunDriver, from the fuzzer sanitizer's runtime) with this
/// executable's LLVMFuzzerTestOneInput and the command line's options.
///
/// SwiftPM links an executable with its entry point renamed (`--defsym main=<module>_main`),
/// so libFuzzer's own `main` cannot be the entry point: each target defines `<module>_main`
/// and calls this.
int fuzz_driver_run(int argc, char **argv);

#endif
