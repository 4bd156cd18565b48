#pragma once
// TLS in front of a plain loopback service, for testing wss:// clients against the real engine:
// a self-signed certificate made at test time with the OpenSSL API, and an in-process proxy that
// terminates TLS and pipes the bytes to 127.0.0.1:<upstream>. Runs its own io thread.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/result.hpp"

namespace rivetkit::testing {

struct TestCert {
    std::string cert_pem;
    std::string key_pem;
    // Writes the certificate (a trust anchor for clients) to `path`.
    Status write_cert(const std::filesystem::path& path) const;
};

// A self-signed P-256 certificate valid for the DNS names and IP addresses given (as subject
// alternative names), usable as its own CA.
Result<TestCert> make_self_signed_cert(const std::string& common_name,
                                       const std::vector<std::string>& dns_names,
                                       const std::vector<std::string>& ip_addresses);

class TlsProxy {
  public:
    static Result<std::unique_ptr<TlsProxy>> start(std::uint16_t upstream_port, TestCert cert);
    ~TlsProxy();
    TlsProxy(const TlsProxy&) = delete;
    TlsProxy& operator=(const TlsProxy&) = delete;

    std::uint16_t port() const noexcept;
    // SNI host names of the TLS handshakes completed so far ("" when a client sent none).
    std::vector<std::string> server_names() const;
    // Handshakes that failed (e.g. the client rejected the certificate).
    std::size_t failed_handshakes() const;

    struct Impl;

  private:
    TlsProxy() = default;
    std::shared_ptr<Impl> impl_;
};

}  // namespace rivetkit::testing
