import MemPressureLifecycle
import Glibc
import MemPressureJetsam
import MemPressureSystem
import Testing
import MemPressureTestSupport

extension KillerTests {
    /// The attack issue 26 reproduced: a user who owns the report directory plants
    /// `episode-1.json -> victim`, and root's jetsam replaced the victim with its report.
    @Test("episode reports: a report directory another user owns (links planted at the report names) is refused, said in the log, and nothing is written through the links",
          .enabled(if: canSwitchUser, "needs root and setpriv(1) to act as another user"))
    func reportDirectoryOfAnotherUser() async throws {
        let stage = try await PlantedLinkStage()
        defer { stage.remove() }
        let (dir, victim, attacker) = (stage.directory, stage.victim, stage.attacker)
        for n in 1...3 { try await attacker.plantLink("episode-\(n).json", to: victim.path) }
        var j = JetsamConfiguration(policy: .ios)
        j.limits = ["Hard": .init(activeBytes: 512 << 20, inactiveBytes: 16 << 20)]
        j.holdKernelOOMKiller = false
        j.reportDirectory = attacker.path
        let (s, killer) = try supervisor(budgetMB: 512, j)
        try await withCleanup({ await s.shutdown() }) {
            try await s.register(model(dir, "Hard", dirtyMB: 30))
            let episodes = killer.episodeUpdates()
            try await s.activate("Hard")
            try await s.background("Hard")  // over its inactive limit once suspended: an episode
            let episode = try #require(await first(of: episodes, within: 60), "the limit kill's episode")
            let log = await s.log
            let said = log.filter { $0.kind == .error }.map(\.payload)
            #expect(said.contains(.policy(.failure(.reportNotWritten(
                episode: episode.number, directory: attacker.path,
                cause: "\(attacker.path): belongs to uid 65534, not to this user (uid 0) or root, and that user could plant links in it: refused, nothing written"
            )))), "\(said)")
            #expect(victim.isIntact, "the victim: \(victim.now)")
            #expect(try attacker.names() == ["episode-1.json", "episode-2.json", "episode-3.json"], "nothing written in the other user's directory")
            #expect(killer.episodes.contains { $0.number == episode.number }, "the episode is kept in memory all the same")
        }
    }
}
