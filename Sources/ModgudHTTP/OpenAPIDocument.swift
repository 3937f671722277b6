import Hummingbird

/// `GET /openapi.json`: the OpenAPI 3.1 description of every public endpoint
/// (`Sources/ModgudHTTP/openapi.json`, embedded in the binary). CI runs schemathesis
/// against a live instance with it (`ops/schemathesis`).
enum OpenAPIDocument {
    static let bytes: [UInt8] = PackageResources.openapi_json

    static func register(on router: Router<ModgudRequestContext>) {
        router.get("/openapi.json") { _, _ in
            var headers = HTTPFields()
            headers[.contentType] = "application/json"
            headers[.cacheControl] = "public, max-age=3600"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
        }
    }
}
