# Sourced by the Llama 3 benchmarks (ac-llama3.sh, ac-solver.sh):
#   llama3_config FLAVOR   sets $config (torchtitan's train config under
#                          models/llama3/train_configs) and $ranks (the
#                          product of its parallel degrees).
llama3_config() {
  case $1 in
    8B) config=llama3_8b.toml; ranks=8 ;;
    70B) config=llama3_70b.toml; ranks=64 ;;
    405B) config=llama3_405b.toml; ranks=512 ;;
    *) echo "unknown flavor $1 (8B, 70B, 405B)" >&2; exit 2 ;;
  esac
}
