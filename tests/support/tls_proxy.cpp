#include "tls_proxy.hpp"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <fstream>
#include <thread>

namespace rivetkit::testing {

namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = asio::ip::tcp;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

Error tls_error(std::string code, std::string message) {
    return Error("test_tls", std::move(code), std::move(message));
}

template <typename T, void (*Free)(T*)>
struct Deleter {
    void operator()(T* p) const noexcept { Free(p); }
};
using PKeyPtr = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using X509Ptr = std::unique_ptr<X509, Deleter<X509, X509_free>>;
using BioPtr = std::unique_ptr<BIO, Deleter<BIO, BIO_free_all>>;
using ExtPtr = std::unique_ptr<X509_EXTENSION, Deleter<X509_EXTENSION, X509_EXTENSION_free>>;

std::string bio_string(BIO* bio) {
    char* data = nullptr;
    long n = BIO_get_mem_data(bio, &data);
    return std::string(data, static_cast<std::size_t>(n));
}

bool add_extension(X509* cert, int nid, const std::string& value) {
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
    ExtPtr ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str()));
    return ext && X509_add_ext(cert, ext.get(), -1) == 1;
}

}  // namespace

Status TestCert::write_cert(const std::filesystem::path& path) const {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << cert_pem;
    out.close();
    if (!out)
        return tls_error("write", "cannot write " + path.string());
    return {};
}

Result<TestCert> make_self_signed_cert(const std::string& common_name,
                                       const std::vector<std::string>& dns_names,
                                       const std::vector<std::string>& ip_addresses) {
    PKeyPtr key(EVP_EC_gen("P-256"));
    if (!key)
        return tls_error("keygen", "EC key generation failed");
    X509Ptr cert(X509_new());
    std::uint32_t serial = 0;
    RAND_bytes(reinterpret_cast<unsigned char*>(&serial), sizeof serial);
    bool ok = cert && X509_set_version(cert.get(), 2) == 1 &&
              ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial & 0x7fffffff) == 1 &&
              X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600) != nullptr &&
              X509_gmtime_adj(X509_getm_notAfter(cert.get()), 24 * 3600) != nullptr &&
              X509_set_pubkey(cert.get(), key.get()) == 1;
    if (!ok)
        return tls_error("cert", "certificate setup failed");
    X509_NAME* name = X509_get_subject_name(cert.get());
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1,
                               0);
    X509_set_issuer_name(cert.get(), name);
    std::string san;
    for (const auto& d : dns_names)
        san += (san.empty() ? "" : ",") + std::string("DNS:") + d;
    for (const auto& ip : ip_addresses)
        san += (san.empty() ? "" : ",") + std::string("IP:") + ip;
    ok = add_extension(cert.get(), NID_basic_constraints, "critical,CA:TRUE") &&
         add_extension(cert.get(), NID_key_usage, "critical,digitalSignature,keyCertSign") &&
         add_extension(cert.get(), NID_subject_key_identifier, "hash") &&
         (san.empty() || add_extension(cert.get(), NID_subject_alt_name, san));
    if (!ok)
        return tls_error("cert", "certificate extensions failed");
    if (X509_sign(cert.get(), key.get(), EVP_sha256()) == 0)
        return tls_error("cert", "signing failed");
    BioPtr cert_bio(BIO_new(BIO_s_mem()));
    BioPtr key_bio(BIO_new(BIO_s_mem()));
    if (PEM_write_bio_X509(cert_bio.get(), cert.get()) != 1 ||
        PEM_write_bio_PrivateKey(key_bio.get(), key.get(), nullptr, nullptr, 0, nullptr,
                                 nullptr) != 1) {
        return tls_error("cert", "PEM encoding failed");
    }
    return TestCert{bio_string(cert_bio.get()), bio_string(key_bio.get())};
}

struct TlsProxy::Impl {
    // Declared before the io_context: pending sessions (destroyed with it) hold SSL handles.
    ssl::context context{ssl::context::tls_server};
    asio::io_context io;
    tcp::acceptor acceptor{io};
    std::uint16_t upstream_port = 0;
    std::uint16_t port = 0;
    std::thread thread;
    mutable std::mutex mutex;
    std::vector<std::string> server_names;
    std::size_t failed = 0;
};

namespace {

using TlsSocket = ssl::stream<tcp::socket>;

void close_both(TlsSocket& tls, tcp::socket& plain) {
    boost::system::error_code ignored;
    tls.lowest_layer().shutdown(tcp::socket::shutdown_both, ignored);
    tls.lowest_layer().close(ignored);
    plain.shutdown(tcp::socket::shutdown_both, ignored);
    plain.close(ignored);
}

// Copies bytes one way until either side ends, then closes both (ending the other direction).
template <typename From, typename To>
asio::awaitable<void> pump(std::shared_ptr<TlsSocket> tls, std::shared_ptr<tcp::socket> plain,
                           From& from, To& to) {
    std::array<char, 64 * 1024> buffer;
    for (;;) {
        auto [rerr, n] = co_await from.async_read_some(asio::buffer(buffer), use_tuple);
        if (rerr)
            break;
        auto [werr, written] = co_await asio::async_write(to, asio::buffer(buffer.data(), n),
                                                          use_tuple);
        (void)written;
        if (werr)
            break;
    }
    close_both(*tls, *plain);
}

asio::awaitable<void> upstream_to_client(std::shared_ptr<TlsSocket> tls,
                                         std::shared_ptr<tcp::socket> plain) {
    co_await pump(tls, plain, *plain, *tls);
}

asio::awaitable<void> session(TlsProxy::Impl* impl, tcp::socket socket) {
    auto tls = std::make_shared<TlsSocket>(std::move(socket), impl->context);
    auto [herr] = co_await tls->async_handshake(ssl::stream_base::server, use_tuple);
    if (herr) {
        std::lock_guard lock(impl->mutex);
        ++impl->failed;
        co_return;
    }
    {
        const char* sni = SSL_get_servername(tls->native_handle(), TLSEXT_NAMETYPE_host_name);
        std::lock_guard lock(impl->mutex);
        impl->server_names.emplace_back(sni != nullptr ? sni : "");
    }
    auto plain = std::make_shared<tcp::socket>(impl->io);
    tcp::endpoint upstream(asio::ip::make_address("127.0.0.1"), impl->upstream_port);
    auto [cerr] = co_await plain->async_connect(upstream, use_tuple);
    if (cerr) {
        close_both(*tls, *plain);
        co_return;
    }
    plain->set_option(tcp::no_delay(true));
    tls->lowest_layer().set_option(tcp::no_delay(true));
    asio::co_spawn(impl->io, upstream_to_client(tls, plain), asio::detached);
    co_await pump(tls, plain, *tls, *plain);
}

asio::awaitable<void> accept_loop(TlsProxy::Impl* impl) {
    for (;;) {
        auto [err, socket] = co_await impl->acceptor.async_accept(use_tuple);
        if (err)
            co_return;
        asio::co_spawn(impl->io, session(impl, std::move(socket)), asio::detached);
    }
}

}  // namespace

Result<std::unique_ptr<TlsProxy>> TlsProxy::start(std::uint16_t upstream_port, TestCert cert) {
    std::unique_ptr<TlsProxy> proxy(new TlsProxy());
    auto impl = std::make_shared<Impl>();
    impl->upstream_port = upstream_port;
    boost::system::error_code ec;
    impl->context.use_certificate_chain(asio::buffer(cert.cert_pem), ec);
    if (!ec)
        impl->context.use_private_key(asio::buffer(cert.key_pem), ssl::context::pem, ec);
    if (ec)
        return tls_error("context", "server certificate: " + ec.message());
    tcp::endpoint listen(asio::ip::make_address("127.0.0.1"), 0);
    impl->acceptor.open(listen.protocol(), ec);
    if (!ec)
        impl->acceptor.bind(listen, ec);
    if (!ec)
        impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec)
        return tls_error("listen", ec.message());
    impl->port = impl->acceptor.local_endpoint().port();
    asio::co_spawn(impl->io, accept_loop(impl.get()), asio::detached);
    impl->thread = std::thread([io = &impl->io] { io->run(); });
    proxy->impl_ = std::move(impl);
    return proxy;
}

TlsProxy::~TlsProxy() {
    if (!impl_)
        return;
    impl_->io.stop();
    if (impl_->thread.joinable())
        impl_->thread.join();
}

std::uint16_t TlsProxy::port() const noexcept {
    return impl_->port;
}

std::vector<std::string> TlsProxy::server_names() const {
    std::lock_guard lock(impl_->mutex);
    return impl_->server_names;
}

std::size_t TlsProxy::failed_handshakes() const {
    std::lock_guard lock(impl_->mutex);
    return impl_->failed;
}

}  // namespace rivetkit::testing
