// Where tally-server and tally-run find the files of this build they load at run time (the
// emulated GPU, the shim, the library stand-ins). The build names two places for each: its path
// in the build tree, and its path relative to the executable's folder as `cmake --install` lays
// them out. The running executable's own folder decides: the build tree's folder means the
// build's file, any other the installed one, so that an installed tree works wherever it was put
// (--prefix, DESTDIR, a package) and never reaches back into the build tree.
#pragma once

#include <string>
#include <string_view>

namespace tally {

struct BuiltFile {
  std::string_view build_path;            // absolute, in the build tree; empty: not built
  std::string_view build_executable_dir;  // the folder of the executable in the build tree
  std::string_view installed_path;        // relative to the installed executable's folder
};

// The file's path for the executable running now (its folder is read from /proc/self/exe, and
// the build's path is kept when that cannot be read). Empty when the build made no such file.
std::string LocateBuiltFile(const BuiltFile& file);

// The same for an executable whose folder is `executable_dir` (tests).
std::string LocateBuiltFile(const BuiltFile& file, std::string_view executable_dir);

}  // namespace tally
