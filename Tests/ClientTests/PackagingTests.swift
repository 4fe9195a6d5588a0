import Glibc
import MemPressureSystem
import Testing
import MemPressureTestSupport

/// The clients as a user gets them: the C library through its header and pkg-config file, the
/// Python module installed with pip.
@Suite("the clients as packages")
struct PackagingTests {
    static let cClientDirectory = repositoryDirectory + "/Sources/MemPressureClientC"

    /// mempressure-client.pc from its template, pointing at the header in the repository and the
    /// library the package built (what `make c-client` writes to .build/pkgconfig).
    static func writePkgConfig(in directory: String) throws {
        let template = String(decoding: try ProcFS.readBytes(cClientDirectory + "/mempressure-client.pc.in"), as: UTF8.self)
        let text = template.replacing("@includedir@", with: cClientDirectory + "/include").replacing("@libdir@", with: buildDirectory)
        try writeText(text, to: directory + "/mempressure-client.pc")
    }

    @Test("the C client's own test (every transcript against its own fake supervisor) and the C example build with gcc through pkg-config against the package's library, and pass the transcripts")
    func cThroughPkgConfig() async throws {
        #expect(access(buildDirectory + "/libmempressure-client.a", R_OK) == 0, "swift build makes the static library")
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        try Self.writePkgConfig(in: dir.path)
        let environment = ["PKG_CONFIG_PATH": dir.path]
        let flags = try await run(["pkg-config", "--cflags", "--libs", "--static", "mempressure-client"], environment: environment)
        try #require(flags.status == .exited(0), "\(flags.output)")
        #expect(flags.output.contains("-lmempressure-client") && flags.output.contains("-lpthread"), "\(flags.output)")
        let program = dir.path + "/example"
        let compile = try await run(
            ["gcc", "-std=gnu11", "-Wall", "-Wextra", "-Werror", repositoryDirectory + "/Sources/mempressure-example-c/main.c", "-o", program]
                + flags.output.split(whereSeparator: \.isWhitespace).map(String.init))
        try #require(compile.status == .exited(0), "\(compile.output)")
        let test = dir.path + "/transcript_test"
        let compileTest = try await run(
            ["gcc", "-std=gnu11", "-Wall", "-Wextra", "-Werror", Self.cClientDirectory + "/tests/transcript_test.c", "-o", test]
                + flags.output.split(whereSeparator: \.isWhitespace).map(String.init))
        try #require(compileTest.status == .exited(0), "\(compileTest.output)")
        let transcripts = TranscriptTests.names.map { "\(ProtocolTranscript.directory)/\($0).txt" }
        let replayed = try await run([test] + transcripts)
        #expect(replayed.status == .exited(0), "\(replayed.output)")
        #expect(replayed.output == TranscriptTests.names.map { "ok \($0).txt\n" }.joined(), "\(replayed.output)")
        for name in ["lifecycle", "memory-warning"] {
            let failure = try await replay(try ProtocolTranscript.named(name), running: [program, "--cache-mb", "1", "--state", "state.txt"])
            #expect(failure == nil, "\(failure ?? "")")
        }
    }

    @Test("the Python client installs with pip from the repository (offline, no setuptools) and runs from there")
    func pythonThroughPip() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let venv = dir.path + "/venv"
        let created = try await run(["python3", "-m", "venv", venv])
        try #require(created.status == .exited(0), "\(created.output)")
        let python = venv + "/bin/python"
        let install = try await run(
            [python, "-m", "pip", "install", "--no-index", "--disable-pip-version-check", pythonClientDirectory],
            environment: ["PYTHONDONTWRITEBYTECODE": "1"])
        try #require(install.status == .exited(0), "\(install.output)")
        // Imported from the virtual environment, not the repository (no PYTHONPATH, elsewhere).
        let location = try await run(["env", "-u", "PYTHONPATH", python, "-c", "import mempressure_client as m; print(m.__file__)"], in: dir.path)
        #expect(location.status == .exited(0) && location.output.hasPrefix(venv + "/lib/"), "\(location.output)")
        let failure = try await replay(
            try ProtocolTranscript.named("memory-warning"), running: ["/usr/bin/env", "-u", "PYTHONPATH", python, examplePython, "--cache-mb", "1"],
            environment: ["PYTHONDONTWRITEBYTECODE": "1"])
        #expect(failure == nil, "\(failure ?? "")")
        // The build wrote nothing into the repository.
        #expect(access(pythonClientDirectory + "/build", F_OK) != 0 && access(pythonClientDirectory + "/__pycache__", F_OK) != 0)
    }
}
