module kubeboot.invalid/bench

go 1.22
