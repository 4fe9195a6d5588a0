/// The first element of `stream` that satisfies `predicate`, or nil if none came within
/// `timeout` seconds (the stream ending counts as none). For waiting on a real event.
public func first<Element: Sendable>(
    of stream: AsyncStream<Element>, within timeout: Double, where predicate: @escaping @Sendable (Element) -> Bool = { _ in true }
) async -> Element? {
    await withTaskGroup(of: Element?.self) { group in
        group.addTask {
            for await element in stream where predicate(element) { return element }
            return nil
        }
        group.addTask {
            do {
                try await Task.sleep(for: .seconds(timeout))
            } catch {
                return nil  // cancelled: the element came
            }
            return nil
        }
        let result = await group.next() ?? nil
        group.cancelAll()
        return result
    }
}
