@testable import ModgudHTTP
import XCTest

/// The console's short device labels (issue 43), on user agents real clients send.
final class UserAgentLabelTests: XCTestCase {
    func testBrowsersAppsAndStacksGetShortLabels() {
        let cases: [(String?, String)] = [
            ("Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1", "Safari on iOS"),
            ("Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/131.0.6778.73 Mobile/15E148 Safari/604.1", "Chrome on iOS"),
            ("Mozilla/5.0 (Linux; Android 15; Pixel 9) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36", "Chrome on Android"),
            ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0", "Edge on Windows"),
            ("Mozilla/5.0 (Macintosh; Intel Mac OS X 14.7; rv:132.0) Gecko/20100101 Firefox/132.0", "Firefox on macOS"),
            ("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0.0.0 Safari/537.36", "Chrome on Linux"),
            ("Acme/3.2 (com.acme.app; build:41; iOS 18.1.0) Alamofire/5.9.1", "Acme on iOS"),
            ("Acme/41 CFNetwork/1568.200.51 Darwin/24.1.0", "Acme on an Apple system"),
            ("okhttp/4.12.0", "an app (okhttp)"),
            ("Dart/3.5 (dart:io)", "a Flutter app"),
            ("python-requests/2.32.3", "python-requests"),
            ("curl/8.11.0", "curl"),
            ("Mozilla/5.0 (compatible)", "unknown"),
            ("", "-"),
            (nil, "-"),
        ]
        for (agent, label) in cases {
            XCTAssertEqual(UserAgentLabel.short(agent), label, agent ?? "nil")
        }
    }
}
