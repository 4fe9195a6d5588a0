import MemPressureCachePolicies
import CoreMetrics
import Glibc
import Synchronization

// MARK: The cache's metrics and internals: shards, the hit path's read buffers, eviction

extension PurgeableCache {
    // MARK: Metrics

    /// Publishes the statistics to the metrics now, hits and misses included (the lookups since
    /// the last batch, which a cache read from only now and then may still hold). Nothing
    /// without a `metricsName`.
    public func publishMetrics() {
        guard metrics != nil else { return }
        state.withLock { publishMetrics(&$0, lookups: true) }
    }

    /// Every this many lookups of a shard, a lookup of a cache with metrics offers to publish the
    /// hits and misses (a power of two).
    @inlinable static var lookupsPerPublishOffer: Int { 256 }

    /// Publishes the hits and misses if `lookupPublishInterval` has passed since they last were
    /// and the policy's lock is free (a lookup never waits for it): what keeps a cache that is
    /// only read publishing.
    @usableFromInline
    func offerToPublishLookups() {
        _ = state.withLockIfAvailable { publishMetrics(&$0, lookups: false) }
    }

    /// Publishes what changed (the policy's lock is held); the lookups' sums over the shards
    /// when `lookups`, else only if the last were published `lookupPublishInterval` ago.
    @usableFromInline
    func publishMetrics(_ s: inout State, lookups: Bool) {
        guard let metrics else { return }
        var sums: (hits: Int, misses: Int)?
        if lookups || CacheMetrics.coarseSeconds() - s.published.lookupsAt >= PurgeableCacheMetrics.lookupPublishInterval {
            var hits = 0, misses = 0
            for i in 0..<shards.count {
                let (h, m) = shards.withLock(i) { ($0.hits, $0.misses) }
                hits += h
                misses += m
            }
            sums = (hits, misses)
        }
        let view = PurgeableCacheStatisticsView(
            evictions: s.evictionCounts, memoryWarningEvictions: s.statistics.memoryWarningEvictions,
            backgroundEvictions: s.statistics.backgroundEvictions, discards: s.statistics.discards, count: s.count,
            totalCost: s.policy.totalCost)
        metrics.publish(view, lookups: sums, &s.published)
    }

    // MARK: Internals

    /// The shard of a key whose hash is `hash`: the hash's top bits (its low bits choose the
    /// bucket in the shard's table, so a shard's keys still spread over all of its buckets).
    @inlinable
    static func shard(of hash: Int) -> Int {
        Int(truncatingIfNeeded: UInt(bitPattern: hash) &>> UInt(Int.bitWidth - shardBits))
    }

    /// Tells the policy about a hit, through the calling thread's read buffer (see the type's
    /// documentation for when a hit is dropped instead).
    @inlinable
    func recordHit(_ key: Key, slot: Int32) {
        let mask = readBuffers.count - 1
        var index = Self.threadSlot() & mask
        // A buffer another thread holds right now is passed over for the next one.
        for _ in 0...mask {
            let recorded: Bool? = readBuffers.withLockIfAvailable(index) { b in
                if b.keys.count >= Self.readBufferCapacity {
                    // Full, and the policy was busy when it filled: this hit is dropped rather
                    // than waited for. Every 16th dropped hit tries the policy's lock again (not
                    // every one: that would fight the thread replaying for its cache line).
                    b.dropped &+= 1
                    guard b.dropped & 15 == 0, replay(&b) else { return true }
                }
                b.keys.append((key, CacheSlot(rawValue: slot)))
                if b.keys.count == 1 { pendingReadBuffers.bitwiseOr(1 << UInt64(index), ordering: .relaxed) }
                if b.keys.count >= Self.readBufferCapacity { _ = replay(&b) }
                return true
            }
            if recorded != nil { return }
            index = (index + 1) & mask
        }
    }

    /// Replays a full read buffer into the policy if its lock is free; returns whether it did.
    @inlinable
    func replay(_ b: inout ReadBuffer) -> Bool {
        let replayed: Void? = state.withLockIfAvailable { s in
            s.policy.recordHits(b.keys)
        }
        guard replayed != nil else { return false }
        b.keys.removeAll(keepingCapacity: true)
        return true
    }

    /// A number that tells the calling thread from the others running at once (its pthread_t,
    /// which is the address of its control block, mixed).
    @inlinable
    static func threadSlot() -> Int {
        Int(truncatingIfNeeded: (UInt64(pthread_self()) &* 0x9E37_79B9_7F4A_7C15) >> 40)
    }

    /// Replays the hits shard `index` holds into the policy, if the policy's lock is free.
    @inlinable
    func replayShardHits(_ index: Int) {
        _ = state.withLockIfAvailable { s in replayShardHits(index, &s) }
    }

    /// Replays the hits shard `index` holds into the policy (the policy's lock is held). They are
    /// swapped out under the shard's lock and replayed after it is released, so that lookups in
    /// the shard do not wait for the policy.
    @inlinable
    func replayShardHits(_ index: Int, _ s: inout State) {
        shards.withLock(index) { shard in
            swap(&shard.pendingKeys, &s.spareKeys)
            swap(&shard.pendingSlots, &s.spareSlots)
            pendingShards.bitwiseAnd(~(1 << UInt64(index)), ordering: .relaxed)
        }
        replayTakenHits(&s)
    }

    /// Empties shard `index`, whose lock the caller holds (`shard`), into the policy if the
    /// policy's lock is free at once; returns whether it did. Taking the policy's lock while
    /// holding a shard's goes against the lock order, so it only tries: a try cannot deadlock.
    /// The policy hears of the hits with the shard's lock held, which happens only when every
    /// replay of the shard found the policy busy and a hit then found the shard full
    /// (`object(forKey:)`).
    @inlinable
    func replayHeldShardHits(_ shard: inout Shard, _ index: Int) -> Bool {
        let replayed: Void? = state.withLockIfAvailable { s in
            swap(&shard.pendingKeys, &s.spareKeys)
            swap(&shard.pendingSlots, &s.spareSlots)
            pendingShards.bitwiseAnd(~(1 << UInt64(index)), ordering: .relaxed)
            replayTakenHits(&s)
        }
        return replayed != nil
    }

    /// Tells the policy of the hits a shard's waiting hits were swapped into (its spare arrays),
    /// and empties them.
    @inlinable
    func replayTakenHits(_ s: inout State) {
        s.policy.recordHits(keys: s.spareKeys, slots: s.spareSlots)
        s.spareKeys.removeAll(keepingCapacity: true)
        s.spareSlots.removeAll(keepingCapacity: true)
    }

    /// Replays every pending hit into the policy (the policy's lock is held): the read buffers'
    /// and the shards'.
    @inlinable
    func replayPendingHits(_ s: inout State) {
        var shardsPending = pendingShards.load(ordering: .relaxed)
        while shardsPending != 0 {
            let index = shardsPending.trailingZeroBitCount
            shardsPending &= shardsPending - 1
            replayShardHits(index, &s)
        }
        var pending = pendingReadBuffers.load(ordering: .relaxed)
        while pending != 0 {
            let index = pending.trailingZeroBitCount
            pending &= pending - 1
            readBuffers.withLock(index) { b in
                s.policy.recordHits(b.keys)
                b.keys.removeAll(keepingCapacity: true)
                pendingReadBuffers.bitwiseAnd(~(1 << UInt64(index)), ordering: .relaxed)
            }
        }
    }

    /// A lookup found `key`'s content discarded: removes the entry, if it still holds that content.
    @usableFromInline
    func removeDiscarded(_ key: Key, _ value: Value) {
        mutate { s, out in
            // Values here are DiscardableContent, hence objects: identity tells them apart.
            let hash = key.hashValue
            guard shards.withLock(Self.shard(of: hash), { $0.element(forKey: key, hash: hash).map { $0.value as AnyObject } === value as AnyObject }) else { return }
            remove(key, reason: .discarded, &s, &out)
        }
    }

    /// Runs `body` under the policy's lock, after replaying the pending hits, then calls the
    /// handler for what left the cache, unlocked.
    @inlinable
    func mutate<R>(_ body: (inout State, inout Departed) -> R) -> R {
        var departed: Departed = []
        var handler: (@Sendable (Key, Value, EvictionReason) -> Void)?
        let result = state.withLock { s -> R in
            replayPendingHits(&s)
            let r = body(&s, &departed)
            epoch.wrappingAdd(1, ordering: .relaxed)
            if metrics != nil { publishMetrics(&s, lookups: false) }
            if !departed.isEmpty { handler = s.handler }
            return r
        }
        if let handler {
            for (key, value, reason) in departed { handler(key, value, reason) }
        }
        return result
    }

    /// Removes `key` from the policy and the entries.
    @inlinable
    func remove(_ key: Key, reason: EvictionReason, _ s: inout State, _ out: inout Departed) {
        s.policy.remove(key)
        drop(key, reason: reason, &s, &out)
    }

    /// Removes an entry the policy no longer holds, counting why.
    @inlinable
    func drop(_ key: Key, reason: EvictionReason, _ s: inout State, _ out: inout Departed) {
        let hash = key.hashValue
        guard let entry = shards.withLock(Self.shard(of: hash), { $0.removeValue(forKey: key, hash: hash) }) else { return }
        s.count -= 1
        switch reason {
        case .policy:
            s.statistics.evictions += 1
            s.evictionCounts.policy += 1
        case .rejected:
            s.statistics.evictions += 1
            s.evictionCounts.rejected += 1
        case .countLimit:
            s.statistics.evictions += 1
            s.evictionCounts.countLimit += 1
        case .discarded: s.statistics.discards += 1
        case .memoryWarning: s.statistics.memoryWarningEvictions += 1
        case .background: s.statistics.backgroundEvictions += 1
        case .removed, .replaced: s.statistics.removals += 1
        }
        out.append((key, entry.value, reason))
    }

    @inlinable
    func enforceCountLimit(_ s: inout State, _ out: inout Departed) {
        guard s.countLimit > 0 else { return }
        while s.count > s.countLimit, let key = s.policy.evictOne() {
            drop(key, reason: .countLimit, &s, &out)
        }
    }
}

extension PurgeableCache: MemoryEventHandling {
    func handle(_ event: MemoryEvent) {
        switch event {
        case .memoryWarning: didReceiveMemoryWarning()
        case .didEnterBackground: didEnterBackground()
        }
    }
}
