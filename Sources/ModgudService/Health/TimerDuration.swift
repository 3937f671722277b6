import Metrics

extension Timer {
    /// Records a duration (swift-metrics takes nanoseconds).
    public func record(_ duration: Duration) {
        recordNanoseconds(duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000)
    }
}
