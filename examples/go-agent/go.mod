module kubeboot.example/goagent

go 1.22
