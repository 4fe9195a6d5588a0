import Glibc
import MemPressureSystem
import MemPressureVMTracker
import Testing

/// `vm PID` finds a process's descendants in the kernel's child lists
/// (/proc/PID/task/TID/children), reading only the tree, not every process's stat.
@Suite("a process tree from the kernel's child lists")
struct ChildListsTests {
    @Test("the child lists give the process table's descendants, and the app holds them all")
    func sameAsTheTable() throws {
        var ready: [Int32] = [-1, -1], hold: [Int32] = [-1, -1]
        try #require(pipe(&ready) == 0 && pipe(&hold) == 0)
        for fd in ready + hold { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        // Two children that end when the test closes the pipe they read (their descriptor 3),
        // and a line once both are forked.
        var options = SpawnOptions(["/bin/sh", "-c", "cat <&3 >/dev/null & cat <&3 >/dev/null & echo ready; wait"])
        options.standardOutput = .descriptor(ready[1])
        options.inheriting = [.init(parent: hold[0], child: 3)]
        let shell = try Spawn.start(options)
        close(ready[1])
        close(hold[0])
        defer {
            close(hold[1])  // the children read end of file and exit; then the shell's wait returns
            var status: Int32 = 0
            _ = waitpid(shell.pid, &status, 0)
            close(ready[0])
        }
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while line.last != 0x0a, read(ready[0], &byte, 1) == 1 { line.append(byte) }
        try #require(String(decoding: line, as: UTF8.self) == "ready\n", "the shell ended before forking its children")

        let snapshotter = Snapshotter()
        let fromLists = try #require(try snapshotter.descendantsFromChildrenLists(of: shell.pid), "this kernel keeps child lists")
        let fromTable = try snapshotter.processTable().descendants(of: shell.pid)
        #expect(fromLists.count == 2)
        #expect(fromLists == fromTable)
        let app = try snapshotter.app(.tree(shell.pid), options: SnapshotOptions(detail: .rollup))
        #expect(app.processes.map(\.pid).sorted() == ([shell.pid] + fromTable).sorted())
    }

    @Test("a process that is gone is named, not taken for one without children")
    func gone() throws {
        var options = SpawnOptions(["/bin/true"])
        options.standardOutput = .null
        let child = try Spawn.start(options)
        var status: Int32 = 0
        _ = waitpid(child.pid, &status, 0)
        #expect(throws: ProcError.noSuchProcess(pid: child.pid)) { try Snapshotter().descendantsFromChildrenLists(of: child.pid) }
    }
}
