# Sourced by the Llama 3 benchmarks (ac-llama3.sh, ac-solver.sh) after they
# set $root:
#   llama3_work NAME      makes the scratch folder $work (removed on exit)
#   llama3_model FLAVOR   sets $config (torchtitan's train config under
#                         models/llama3/train_configs) and $ranks (the
#                         product of its parallel degrees), and exports the
#                         shape-only model to $work/FLAVOR/model.pt
llama3_work() {
  work=$(mktemp -d "/tmp/$1.XXXXXX")
  trap 'rm -rf "$work"' EXIT
}
llama3_model() {
  case $1 in
    8B) config=llama3_8b.toml; ranks=8 ;;
    70B) config=llama3_70b.toml; ranks=64 ;;
    405B) config=llama3_405b.toml; ranks=512 ;;
    *) echo "unknown flavor $1 (8B, 70B, 405B)" >&2; exit 2 ;;
  esac
  /usr/bin/python3 "$root/models/export.py" --model llama3 --flavor "$1" \
    --out "$work/$1" > /dev/null
}
