// `preflight acknowledge --state-dir DIR`: the events check's cursor moved to the live kernel
// log's last record (docs/checks/events.md, "Which events count").
#include <iostream>

#include "app/commands.hpp"
#include "checks/events/events_check.hpp"
#include "preflight/errors.hpp"
#include "report/atomic_file.hpp"

namespace preflight {

CommandResult acknowledge_command(const Invocation& inv) {
  const std::string& dir = inv.acknowledge.state_dir;
  const KernelLogCursor cursor = kernel_log_end();
  const std::string path = dir + "/" + kCursorFile;
  try {
    write_file_atomically(path, cursor_text(cursor));
  } catch (const std::exception& e) {
    throw InvalidInput("--state-dir: cannot keep the kernel log's cursor: " +
                       std::string(e.what()));
  }
  std::cout << "acknowledged the kernel log through record " << cursor.seq << " of boot "
            << cursor.boot_id << ": events logged before now no longer count (" << path << ")\n";
  return {};
}

}  // namespace preflight
