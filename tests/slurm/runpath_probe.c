/* A program that does nothing: tests/slurm/CMakeLists.txt links it with the library search
 * paths the Slurm hooks must refuse or accept (scripts/slurm/trust.sh). */
int main(void) {
  return 0;
}
