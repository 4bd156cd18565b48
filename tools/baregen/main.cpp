// baregen: BARE schema → C++ header + source.
//
//   baregen <schema.bare> --namespace <ns> --header <out.hpp> --source <out.cpp>
//           --include <path the source uses to include the header>

#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>

#include "generator.hpp"
#include "schema.hpp"

namespace {

bool write_file(const std::string& path, const std::string& content) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << content;
    return static_cast<bool>(out);
}

int usage() {
    std::cerr << "usage: baregen <schema.bare> --namespace NS --header OUT.hpp --source OUT.cpp "
                 "--include INCLUDE_PATH\n";
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2)
        return usage();
    const std::string schema_path = argv[1];
    std::map<std::string, std::string> opts;
    for (int i = 2; i + 1 < argc; i += 2)
        opts[argv[i]] = argv[i + 1];
    for (const char* key : {"--namespace", "--header", "--source", "--include"}) {
        if (!opts.count(key))
            return usage();
    }

    std::ifstream in(schema_path, std::ios::binary);
    if (!in) {
        std::cerr << "baregen: cannot read " << schema_path << "\n";
        return 1;
    }
    std::ostringstream text;
    text << in.rdbuf();

    try {
        const baregen::Schema schema = baregen::parse_schema(text.str(), schema_path);
        const std::string label = schema_path.substr(schema_path.find_last_of('/') + 1);
        const auto out = baregen::generate(
            schema, baregen::GenOptions{opts["--namespace"], opts["--include"], label});
        if (!write_file(opts["--header"], out.header) ||
            !write_file(opts["--source"], out.source)) {
            std::cerr << "baregen: cannot write outputs\n";
            return 1;
        }
    } catch (const baregen::SchemaError& e) {
        std::cerr << e.message << "\n";
        return 1;
    }
    return 0;
}
