/// Entries of a policy in flat arrays, with intrusive doubly linked lists threaded through them
/// by index. One dictionary lookup per request; no allocation per entry once slots are reused.
@usableFromInline
struct NodeStore<Key: Hashable & Sendable>: Sendable {
    @inlinable static var none: Int32 { -1 }

    @usableFromInline var keys: [Key?] = []
    @usableFromInline var costs: [Int] = []
    /// Per-policy bits: a frequency counter, a visited bit, which list the slot is on.
    @usableFromInline var marks: [UInt8] = []
    @usableFromInline var lists: [UInt8] = []
    @usableFromInline var newer: [Int32] = []
    @usableFromInline var older: [Int32] = []
    @usableFromInline var free: [Int32] = []
    @usableFromInline var index: [Key: Int32] = [:]

    @inlinable var count: Int { index.count }

    @inlinable init() {}

    @inlinable func slot(of key: Key) -> Int32? { index[key] }

    @inlinable func key(_ slot: Int32) -> Key { keys[Int(slot)]! }
    @inlinable func cost(_ slot: Int32) -> Int { costs[Int(slot)] }

    /// A new slot for `key` (not on any list yet).
    @inlinable mutating func add(_ key: Key, cost: Int) -> Int32 {
        let slot: Int32
        if let reused = free.popLast() {
            slot = reused
            keys[Int(slot)] = key
            costs[Int(slot)] = cost
            marks[Int(slot)] = 0
            lists[Int(slot)] = 0
        } else {
            slot = Int32(keys.count)
            keys.append(key)
            costs.append(cost)
            marks.append(0)
            lists.append(0)
            newer.append(Self.none)
            older.append(Self.none)
        }
        index[key] = slot
        return slot
    }

    /// Frees a slot (it must be off every list). Returns its key.
    @discardableResult
    @inlinable mutating func release(_ slot: Int32) -> Key {
        let key = keys[Int(slot)]!
        keys[Int(slot)] = nil
        index.removeValue(forKey: key)
        free.append(slot)
        return key
    }

    // MARK: Lists

    /// A list's ends and its totals. `head` is the newest entry, `tail` the oldest.
    @usableFromInline
    struct List: Sendable {
        @usableFromInline var head: Int32 = NodeStore.none
        @usableFromInline var tail: Int32 = NodeStore.none
        @usableFromInline var count = 0
        @usableFromInline var cost = 0
        @inlinable var isEmpty: Bool { count == 0 }
        @inlinable init() {}
    }

    @inlinable mutating func pushHead(_ slot: Int32, _ list: inout List) {
        let s = Int(slot)
        older[s] = list.head
        newer[s] = Self.none
        if list.head != Self.none { newer[Int(list.head)] = slot } else { list.tail = slot }
        list.head = slot
        list.count += 1
        list.cost += costs[s]
    }

    @inlinable mutating func unlink(_ slot: Int32, _ list: inout List) {
        let s = Int(slot)
        let n = newer[s], o = older[s]
        if n != Self.none { older[Int(n)] = o } else { list.head = o }
        if o != Self.none { newer[Int(o)] = n } else { list.tail = n }
        newer[s] = Self.none
        older[s] = Self.none
        list.count -= 1
        list.cost -= costs[s]
    }

    @inlinable mutating func moveToHead(_ slot: Int32, _ list: inout List) {
        guard list.head != slot else { return }
        unlink(slot, &list)
        pushHead(slot, &list)
    }

    /// The next newer entry (towards the head), or none.
    @inlinable func newerThan(_ slot: Int32) -> Int32 { newer[Int(slot)] }
}
