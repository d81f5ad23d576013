#pragma once
// The standard streams. Input: a folder given as standard input is an error, not empty input.
// Output that cannot be lost silently. The commands write their results with printf; a failed write
// (a full disk, /dev/full) only sets standard output's error flag, so the commands that stream
// output check it as they go, and main checks it, flushes and closes it at the end: an error names
// the file behind standard output and the reason, and the program ends with status 1. A reader that
// went away (EPIPE, as in `| head` with SIGPIPE ignored) ends the program quietly with status 141,
// as if SIGPIPE had ended it, which is what other Unix tools do.
#include <fstream>
#include <initializer_list>
#include <ostream>
#include <string>
#include <utility>

namespace tfm::cli {

// Throws tfm::Error when standard input is a folder (`< some-folder` reads as empty input).
void check_stdin();

// Opens `path` (given by `flag`, e.g. "--input") for reading, or throws tfm::Error saying why:
// "cannot read --input '/tmp': it is a folder, not a file", "...: No such file or directory".
void open_input(std::ifstream& file, const std::string& path, const char* flag);
// The same on a file descriptor of its own (O_CLOEXEC), for a reader that needs it (translate's
// stop handler ends a read waiting on it); the caller closes it.
int open_input_fd(const std::string& path, const char* flag);

// Thrown when the reader of standard output went away; main ends quietly.
struct BrokenPipe {};

// Flushes standard output; throws tfm::Error (or BrokenPipe) if a write to it failed.
void check_stdout();
// check_stdout, then closes standard output and checks that too (the end of main).
void close_stdout();
// For a file a command streams into: flushes `out` and throws tfm::Error naming `what` (e.g.
// "--attention 'a.jsonl'") if a write to it failed. Called right after a write that failed, it
// reports that write's reason.
void check_stream(std::ostream& out, const std::string& what);

// Throws tfm::Error when the file a command writes (`path`, given by `flag`) is one of the files it
// reads (each given by its flag; empty paths and files that do not exist yet are skipped): the
// output would replace, or first truncate, an input.
void check_not_an_input(const std::string& path, const char* flag,
                        std::initializer_list<std::pair<const char*, std::string>> inputs);

}  // namespace tfm::cli
