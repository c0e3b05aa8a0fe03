module hako.local/hako

go 1.26
